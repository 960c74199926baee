package shardstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// Document moves (docs/design/0014, "Shard key changes"): an update that
// changes a document's shard key to a value another shard owns is
// carried out by the shard that holds the document. It records the move,
// inserts the new document on the owner, then deletes its own copy with
// the client's retry record in the same batch, and drops the record.
// While a move is recorded its namespace is held on this shard (routed
// commands wait, as for a migration's critical section), so the
// document cannot change under it; a new primary finds the record and
// finishes the move before it lets routed commands in. A crash therefore
// never leaves two copies, or none, and a retry of the update answers
// the first attempt's result.

// MoveDocumentRequest is one update's move of a document to the shard
// owning its new shard key value.
type MoveDocumentRequest struct {
	Namespace string
	ToShard   string
	Pre, Post bson.D
	// Result is the statement's retry record (what a retry answers);
	// Session names the retryable write; nil records nothing.
	Result  bson.D
	Session *MoveSession
}

// MoveSession is the retryable write a move is a statement of.
type MoveSession struct {
	LSID   []byte `bson:"lsid"`
	Label  string `bson:"label"`
	Txn    int64  `bson:"txnNumber"`
	StmtID int32  `bson:"stmtId"`
}

// documentMove is a move's record in config.documentMoves.
type documentMove struct {
	ID        string       `bson:"_id"`
	Namespace string       `bson:"ns"`
	ToShard   string       `bson:"toShard"`
	Pre       bson.D       `bson:"preImage"`
	Post      bson.D       `bson:"postImage"`
	Result    bson.D       `bson:"result,omitempty"`
	Session   *MoveSession `bson:"session,omitempty"`
	// Inserted: the owner acknowledged the new document.
	Inserted bool `bson:"inserted"`
}

// documentMovesColl holds the moves in progress.
const documentMovesColl = "documentMoves"

// MoveDocument moves req.Pre, which this shard holds, to req.ToShard as
// req.Post. WriteConflict says the document changed since the update
// read it: nothing was written.
func (m *Migrations) MoveDocument(ctx context.Context, req MoveDocumentRequest) error {
	if err := m.checkPrimary(); err != nil {
		return err
	}
	rec := documentMove{ID: bson.NewObjectID().Hex(), Namespace: req.Namespace, ToShard: req.ToShard,
		Pre: req.Pre, Post: req.Post, Result: req.Result, Session: req.Session}
	release, err := m.holdForMove(ctx, rec.Namespace, rec.ID)
	if err != nil {
		return err
	}
	defer release()
	m.setRunning(rec.ID, rec.Namespace, true)
	defer m.setRunning(rec.ID, rec.Namespace, false)
	if done, err := m.statementDone(rec); err != nil || done {
		return err // a move of this statement finished while this one waited
	}
	if err := m.checkMovable(rec); err != nil {
		return err
	}
	if err := m.putRecord(documentMovesColl, rec.ID, rec); err != nil {
		return err
	}
	return m.finishMove(ctx, &rec)
}

// checkMovable checks, under the hold, that this shard still holds the
// document as the update read it and still owns it.
func (m *Migrations) checkMovable(rec documentMove) error {
	c, err := m.collection(rec.Namespace)
	if err != nil {
		return err
	}
	id, _ := bsonutil.Field(rec.Pre, "_id")
	cur, err := c.FindOne(bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return err
	}
	if cur == nil || !sameDoc(cur, rec.Pre) {
		return mongoerr.New(mongoerr.WriteConflict, "the document changed while its update moved it to another shard; the update was not applied")
	}
	if owns, held := m.ExpiryOwner(rec.Namespace); held || owns == nil || !owns(rec.Pre) {
		return mongoerr.Newf(mongoerr.StaleConfig, "the placement of %s changed while an update moved a document between shards", rec.Namespace)
	}
	return nil
}

// finishMove carries a recorded move to its end: the new document on
// the owner, this shard's copy deleted with the retry record, the record
// dropped. An owner that refuses the document aborts the move (nothing
// changed here); one that does not answer leaves the record, and the
// hold, for the recovery to finish.
func (m *Migrations) finishMove(ctx context.Context, rec *documentMove) error {
	if !rec.Inserted {
		err := m.insertMoved(ctx, rec)
		if err != nil && !isUnanswered(err) {
			m.opts.Logger.Info("document move refused by its new owner", "ns", rec.Namespace, "toShard", rec.ToShard, "err", err)
			if derr := m.deleteRecord(documentMovesColl, rec.ID); derr != nil {
				return errors.Join(err, derr)
			}
			return err
		}
		if err != nil {
			return err
		}
		rec.Inserted = true
		if err := m.putRecord(documentMovesColl, rec.ID, rec); err != nil {
			return err
		}
	}
	m.failPoint(ctx, failpoint.DocumentMoveHangAfterInsert)
	if err := m.deleteMovedFrom(rec); err != nil {
		return err
	}
	return m.deleteRecord(documentMovesColl, rec.ID)
}

// insertMoved inserts the new document on its owner, with the owner's
// shard version from this shard's routing table: an owner that lost the
// range since answers StaleConfig. A duplicate _id is the document
// itself when it is the one this move inserts (an attempt whose reply
// was lost).
func (m *Migrations) insertMoved(ctx context.Context, rec *documentMove) error {
	table, err := m.opts.State.Refresh(ctx, rec.Namespace)
	if err != nil {
		return err
	}
	if table == nil || !NewFilter(table, rec.ToShard).Owns(rec.Post) {
		return mongoerr.Newf(mongoerr.StaleConfig, "the placement of %s changed while an update moved a document between shards", rec.Namespace)
	}
	hosts, err := m.shardHosts(ctx, rec.ToShard)
	if err != nil {
		return err
	}
	db, coll, _ := strings.Cut(rec.Namespace, ".")
	version := table.ShardVersion(rec.ToShard)
	reply, err := RunOnPrimary(ctx, m.opts.Client, hosts, db, bson.D{{Key: "insert", Value: coll},
		{Key: "documents", Value: bson.A{rec.Post}}, {Key: "shardVersion", Value: version.Doc()},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}}})
	if err != nil {
		return err
	}
	wes := bsonutil.ToA(mustFieldOf(reply, "writeErrors"))
	if len(wes) == 0 {
		return nil
	}
	we := bsonutil.ToD(wes[0])
	code, _ := bsonutil.Field(we, "code")
	msg, _ := bsonutil.Field(we, "errmsg")
	n, _ := code.(int32)
	werr := mongoerr.Newf(mongoerr.Code(n), "%v", msg)
	if werr.Code == mongoerr.DuplicateKey && m.ownerHolds(ctx, hosts, db, coll, version, rec.Post) {
		return nil
	}
	return werr
}

// ownerHolds reports whether the owner holds doc as it is.
func (m *Migrations) ownerHolds(ctx context.Context, hosts []string, db, coll string, version shardmeta.ChunkVersion, doc bson.D) bool {
	id, _ := bsonutil.Field(doc, "_id")
	reply, err := RunOnPrimary(ctx, m.opts.Client, hosts, db, bson.D{{Key: "find", Value: coll},
		{Key: "filter", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "limit", Value: int64(1)},
		{Key: "singleBatch", Value: true}, {Key: "shardVersion", Value: version.Doc()}})
	if err != nil {
		return false
	}
	batch := bsonutil.ToA(mustFieldOf(bsonutil.ToD(mustFieldOf(reply, "cursor")), "firstBatch"))
	return len(batch) == 1 && sameDoc(bsonutil.ToD(batch[0]), doc)
}

// deleteMovedFrom deletes this shard's copy with the statement's retry
// record in the same batch. A copy that is gone (it expired meanwhile)
// or differs (a write that did not come through a router) stays as it
// is; the move is done on the owner.
func (m *Migrations) deleteMovedFrom(rec *documentMove) error {
	c, err := m.collection(rec.Namespace)
	if err != nil {
		return err
	}
	opt, err := m.recordedOptions(rec)
	if err != nil {
		return err
	}
	id, _ := bsonutil.Field(rec.Pre, "_id")
	_, err = c.Modify(id, opt, func(cur bson.D) (docstore.Change, error) {
		switch {
		case cur == nil:
			m.opts.Logger.Info("a moved document's old copy is gone already (it expired)", "ns", rec.Namespace, "_id", id)
			return docstore.Change{Kind: docstore.Keep}, nil
		case !sameDoc(cur, rec.Pre):
			m.opts.Logger.Warn("a moved document's old copy changed outside the move; left in place", "ns", rec.Namespace, "_id", id)
			return docstore.Change{Kind: docstore.Keep}, nil
		}
		return docstore.Change{Kind: docstore.Remove}, nil
	})
	if err != nil {
		return fmt.Errorf("shardstate: delete the moved document from %s: %w", rec.Namespace, err)
	}
	return nil
}

// statementDone reports whether the move's statement is recorded as
// done: an earlier attempt's move finished (by its own run or by the
// recovery) while this attempt waited for the hold.
func (m *Migrations) statementDone(rec documentMove) (bool, error) {
	rt, err := m.statement(&rec)
	if err != nil || rt == nil {
		return false, err
	}
	_, done, err := rt.Prior(0)
	return done, err
}

// statement is the retryable write the move is a statement of; nil
// without one.
func (m *Migrations) statement(rec *documentMove) (*session.Txn, error) {
	if rec.Session == nil {
		return nil, nil
	}
	s := rec.Session
	return session.Begin(session.Write{Engine: m.opts.Store.Engine(), LSID: s.LSID, Label: s.Label, Txn: s.Txn,
		StmtIDs: []int32{s.StmtID}, Now: m.opts.Clock.Now, Migrated: true})
}

// recordedOptions are the write options that add the move's statement
// record to the deletion's batch.
func (m *Migrations) recordedOptions(rec *documentMove) (docstore.WriteOptions, error) {
	rt, err := m.statement(rec)
	if err != nil || rt == nil {
		return docstore.WriteOptions{}, err
	}
	result := rec.Result
	return docstore.WriteOptions{Extra: rt.Record(0, func() bson.D { return result })}, nil
}

// recoverDocumentMoves finishes the moves a previous primary recorded.
func (m *Migrations) recoverDocumentMoves(ctx context.Context) error {
	moves, err := readAll[documentMove](m, documentMovesColl)
	if err != nil {
		return err
	}
	for i := range moves {
		if err := m.recoverMove(ctx, &moves[i]); err != nil {
			return fmt.Errorf("document move %s: %w", moves[i].ID, err)
		}
	}
	return nil
}

// recoverMove finishes rec unless MoveDocument runs it here, or it ended
// while the recovery waited for its hold.
func (m *Migrations) recoverMove(ctx context.Context, rec *documentMove) error {
	if m.isRunning(rec.ID) {
		return nil
	}
	release, err := m.holdForMove(ctx, rec.Namespace, rec.ID)
	if err != nil {
		return err
	}
	defer release()
	if !m.moveRecorded(rec.ID) {
		return nil
	}
	m.opts.Logger.Info("recovering document move", "ns", rec.Namespace, "toShard", rec.ToShard, "inserted", rec.Inserted)
	return m.finishMove(ctx, rec)
}

// setRunning notes that MoveDocument runs move id on ns, or no longer.
func (m *Migrations) setRunning(id, ns string, running bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if running {
		m.runningMoves[id] = ns
	} else {
		delete(m.runningMoves, id)
	}
}

func (m *Migrations) isRunning(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.runningMoves[id]
	return ok
}

// holdForMove holds ns for move id: it waits out a migration's critical
// section and any other move, stops new routed commands on ns and waits
// for those in flight. The move counts in flight itself, so a migration
// entering its critical section waits for it. release lets go unless
// the move's record is still there (its owner did not answer): the hold
// then stays until the recovery finishes the move.
func (m *Migrations) holdForMove(ctx context.Context, ns, id string) (release func(), err error) {
	m.loadRecorded()
	deadline := m.opts.Clock.Now().Add(criticalSectionWait)
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.critical[ns] || (m.moving[ns] != "" && m.moving[ns] != id) {
		if ctx.Err() != nil || !m.opts.Clock.Now().Before(deadline) {
			return nil, mongoerr.Newf(mongoerr.LockBusy, "%s is busy with a migration or another document move", ns)
		}
		m.waitBriefly()
	}
	m.moving[ns] = id
	m.inflight[ns]++
	for m.inflight[ns] > 1 {
		if ctx.Err() != nil || !m.opts.Clock.Now().Before(deadline) {
			m.inflight[ns]--
			m.dropMoveHold(ns, id)
			return nil, mongoerr.Newf(mongoerr.LockBusy, "%s: routed commands still running after %s", ns, criticalSectionWait)
		}
		m.waitBriefly()
	}
	return func() { m.releaseMove(ns, id) }, nil
}

func (m *Migrations) releaseMove(ns, id string) {
	pending := m.moveRecorded(id)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inflight[ns]--
	if !pending {
		m.dropMoveHold(ns, id)
	}
	m.wakeLocked()
}

// dropMoveHold ends id's hold of ns; m.mu is held.
func (m *Migrations) dropMoveHold(ns, id string) {
	if m.moving[ns] == id {
		delete(m.moving, ns)
		m.wakeLocked()
	}
}

// moveRecorded reports whether move id's record is still there; a record
// that cannot be read counts as there.
func (m *Migrations) moveRecorded(id string) bool {
	moves, err := readAll[documentMove](m, documentMovesColl)
	if err != nil {
		return true
	}
	for _, rec := range moves {
		if rec.ID == id {
			return true
		}
	}
	return false
}

// collection opens ns on this member.
func (m *Migrations) collection(ns string) (*docstore.Collection, error) {
	db, coll, _ := strings.Cut(ns, ".")
	c := m.opts.Store.Collection(db, coll)
	if c == nil {
		return nil, mongoerr.Newf(mongoerr.NamespaceNotFound, "collection %s does not exist", ns)
	}
	return c, nil
}

// sameDoc reports whether a and b are the same document, field for field.
func sameDoc(a, b bson.D) bool {
	ra, errA := bson.Marshal(a)
	rb, errB := bson.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ra, rb)
}

func mustFieldOf(d bson.D, key string) any {
	v, _ := bsonutil.Field(d, key)
	return v
}
