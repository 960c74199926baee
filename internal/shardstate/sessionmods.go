package shardstate

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/shardremote"
)

// Retryable-write history moves with the range: the recipient pulls the
// donor's statement records (_getNextSessionMods) and installs them
// before the commit, so that a retry the router sends it afterwards
// answers the donor's result instead of writing again. Which records,
// and why all sessions' latest, is internal/session's (migrated.go).
//
// The records go in passes, each ended by an empty answer: one while the
// recipient catches up, then, in the critical section, one of the
// sessions written since the pass before (session.Seen). A busy shard
// holds thousands of sessions; moving them all inside the critical
// section held the collection's writes for tens of milliseconds.

// sessionBatchBytes bounds the statement results one
// _getNextSessionMods answer carries: about this much, and twice as much
// at most (a page ends between sessions).
const sessionBatchBytes = 4 << 20

// sessionExport is the donor's position in its session records for one
// migration, and its last answer, kept so that a request sent again
// after a lost reply gets the same answer.
type sessionExport struct {
	from []byte
	done bool // the pass's last page was sent: an empty answer ends it
	seq  int64
	last []session.MovedStmt
	seen session.Seen
}

// NextSessionMods answers _getNextSessionMods number seq: the next
// statement records of the donor's sessions; an empty answer ends them.
func (m *Migrations) NextSessionMods(id string, seq int64) ([]session.MovedStmt, error) {
	src, err := m.cloneSource(id)
	if err != nil {
		return nil, err
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	ex := &src.sessions
	if seq == ex.seq {
		return ex.last, nil
	}
	var stmts []session.MovedStmt
	if ex.done {
		ex.from, ex.done = nil, false // the next request starts a pass
	} else if stmts, err = m.exportSessions(ex); err != nil {
		return nil, fmt.Errorf("shardstate: read the session records for migration %s: %w", id, err)
	}
	ex.seq, ex.last = seq, stmts
	return stmts, nil
}

// exportSessions reads the next page of the pass from a snapshot, so
// that each session's heads and statements are of one instant.
func (m *Migrations) exportSessions(ex *sessionExport) ([]session.MovedStmt, error) {
	if ex.seen == nil {
		ex.seen = session.Seen{}
	}
	snap := m.opts.Store.Engine().NewSnapshot()
	defer snap.Close()
	stmts, next, err := session.ExportStmts(snap, ex.from, sessionBatchBytes, ex.seen)
	if err != nil {
		return nil, err
	}
	// An empty page ends the pass itself; a last page with statements is
	// followed by an empty answer.
	ex.from, ex.done = next, next == nil && len(stmts) > 0
	return stmts, nil
}

// SessionModsDoc is the statement records as _getNextSessionMods
// answers them.
func SessionModsDoc(stmts []session.MovedStmt) bson.A {
	out := make(bson.A, len(stmts))
	for i, st := range stmts {
		out[i] = bson.D{{Key: "lsid", Value: bson.Binary{Data: st.LSID}}, {Key: "txnNumber", Value: st.Txn},
			{Key: "lastWrite", Value: st.LastWrite}, {Key: "stmtId", Value: st.Stmt},
			{Key: "result", Value: bson.Binary{Data: st.Result}}}
	}
	return out
}

// pullSessions installs one pass of the donor's statement records, until
// an empty answer ends it. A request whose answer was not installed is sent again with its
// number (rc.sessionSeq moves on only after), so no batch is skipped.
func (m *Migrations) pullSessions(ctx context.Context, rc *receiver) error {
	for ctx.Err() == nil {
		seq := rc.sessionSeq + 1
		reply, err := shardremote.RunOn(ctx, m.opts.Client, rc.req.From, "admin", bson.D{{Key: "_getNextSessionMods", Value: rc.req.MigrationID},
			{Key: "seq", Value: seq}})
		if err != nil {
			return err
		}
		stmts, err := movedStmts(reply)
		if err != nil {
			return err
		}
		if len(stmts) == 0 {
			return nil
		}
		if err := session.ImportStmts(m.opts.Store.Engine(), stmts); err != nil {
			return fmt.Errorf("shardstate: install the session records of migration %s: %w", rc.req.MigrationID, err)
		}
		rc.mu.Lock()
		rc.sessionStmts += int64(len(stmts))
		rc.mu.Unlock()
		rc.sessionSeq = seq
	}
	return ctx.Err()
}

// movedStmts reads a _getNextSessionMods answer.
func movedStmts(reply bson.D) ([]session.MovedStmt, error) {
	v, _ := bsonFieldAny(reply, "stmts")
	arr, _ := v.(bson.A)
	out := make([]session.MovedStmt, 0, len(arr))
	for _, x := range arr {
		raw, err := bson.Marshal(x)
		if err != nil {
			return nil, err
		}
		var st struct {
			LSID      bson.Binary `bson:"lsid"`
			Txn       int64       `bson:"txnNumber"`
			LastWrite int64       `bson:"lastWrite"`
			Stmt      int32       `bson:"stmtId"`
			Result    bson.Binary `bson:"result"`
		}
		if err := bson.Unmarshal(raw, &st); err != nil {
			return nil, mongoerr.Newf(mongoerr.FailedToParse, "a _getNextSessionMods answer: %v", err)
		}
		out = append(out, session.MovedStmt{LSID: st.LSID.Data, Txn: st.Txn, LastWrite: st.LastWrite, Stmt: st.Stmt, Result: st.Result.Data})
	}
	return out, nil
}
