package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/replcmds"
	"github.com/mayflydb/mayfly/internal/txnrules"
)

// What every command does differently on a replica set member: writes
// only on the primary, reads on a secondary only with a read preference
// that allows one, write and read concerns, and the cluster time in
// every reply. The replSet* commands themselves are internal/replcmds'.

// allowedOnSecondary is where mongod lets a command run (its
// AllowedOnSecondary): anywhere, on a secondary only when the read
// preference allows one, or on the primary only.
type allowedOnSecondary int

const (
	alwaysOnSecondary allowedOnSecondary = iota
	optInOnSecondary
	neverOnSecondary
)

// role is what a replica set member checks before it runs a command.
type role struct {
	secondary allowedOnSecondary
	// needsPrimaryOrSecondary: mongod's maintenanceOk() is false, so a
	// member neither primary nor secondary (not yet initiated, removed)
	// refuses the command even where its read preference would allow it.
	needsPrimaryOrSecondary bool
}

// checkRole refuses a command this member's role does not allow, in
// mongod's order: a read that could have opted in to a secondary and did
// not (13435, on any member but the primary), a write (10107), then a
// command a member neither primary nor secondary may not run (13436).
func (h *Handler) checkRole(r *request, ro role) error {
	rs := h.deps.Repl
	if rs == nil {
		return nil
	}
	switch ro.secondary {
	case neverOnSecondary:
		if err := rs.CheckWrite(); err != nil {
			return replcmds.Error(err)
		}
	case optInOnSecondary:
		// CheckRead refuses without the opt-in on any member but the
		// primary; with it, it also refuses on a member neither primary
		// nor secondary, and on a secondary whose clock is too far off
		// to tell what has expired, so only the reads of data call it so.
		ok := secondaryOk(r)
		if !ok || ro.needsPrimaryOrSecondary {
			if err := rs.CheckRead(ok); err != nil {
				return replcmds.Error(err)
			}
		}
	}
	if ro.needsPrimaryOrSecondary {
		return replcmds.Error(rs.CheckPrimaryOrSecondary())
	}
	return nil
}

// secondaryOk reports whether the read preference lets a secondary serve.
func secondaryOk(r *request) bool {
	v, ok := bsonutil.Field(r.body, "$readPreference")
	if !ok {
		return false
	}
	d, _ := v.(bson.D)
	mode, _ := bsonutil.Field(d, "mode")
	return mode != nil && mode != "primary"
}

// replCommandRows are the replica set commands (internal/replcmds),
// which run on any member, whatever its state.
func replCommandRows() map[string]command {
	rows := map[string]command{}
	for name, run := range replcmds.Commands() {
		rows[name] = command{run: replHandler(run)}
	}
	return rows
}

func replHandler(run replcmds.HandlerFunc) handlerFunc {
	return func(h *Handler, r *request) (bson.D, error) {
		return run(r.ctx, h.replMember, r.args())
	}
}

// awaitWriteConcern waits for a write's write concern
// (replcmds.Member.AwaitWriteConcern); other commands take none.
func (h *Handler) awaitWriteConcern(r *request, reply bson.D) bson.D {
	if !h.isWrite(r.name) {
		return reply
	}
	return h.replMember.AwaitWriteConcern(r.ctx, r.args(), reply)
}

// awaitReadConcern waits for a read's read concern
// (replcmds.Member.AwaitReadConcern).
func (h *Handler) awaitReadConcern(r *request) error {
	return interruptError(h.replMember.AwaitReadConcern(r.ctx, r.args()))
}

// helloReplFields adds the replica set's fields to a hello reply; it
// waits first when the hello is awaitable and nothing changed.
func (h *Handler) helloReplFields(r *request) (bool, bson.D, error) {
	rs := h.deps.Repl
	if err := h.awaitTopology(r); err != nil {
		return false, nil, err
	}
	writable, fields, counter := rs.HelloAt()
	fields = append(fields, bson.E{Key: "topologyVersion", Value: h.topologyVersionAt(counter)})
	return writable, fields, nil
}

// topologyVersion is this member's topologyVersion now.
func (h *Handler) topologyVersion() bson.D {
	_, counter := h.deps.Repl.TopologyChanges()
	return h.topologyVersionAt(counter)
}

func (h *Handler) topologyVersionAt(counter int64) bson.D {
	return bson.D{{Key: "processId", Value: h.processID}, {Key: "counter", Value: counter}}
}

// withTopologyVersion adds the member's topologyVersion to a reply whose
// error, or write concern error, is a NotPrimaryError, as mongod does. A
// driver compares it with the one of the last hello it saw: an error no
// newer than that hello is stale and changes nothing. Without it the
// driver marks the member Unknown on every such error, and the Node.js
// driver's monitor, once parked in an awaitable hello, ignores the request
// to check at once and looks again only when that hello returns, up to
// heartbeatFrequencyMS (10 s) later: mongosh's startup countDocuments,
// refused by a member not yet initiated, left the member unselectable for
// longer than mongosh's 2 s serverSelectionTimeoutMS on localhost, and the
// rs.initiate typed next failed with "MongoServerSelectionError: node is
// not in primary or recovering state".
func (h *Handler) withTopologyVersion(reply bson.D) bson.D {
	if !codeIn(reply).IsNotPrimaryError() {
		wce, _ := bsonutil.Field(reply, "writeConcernError")
		if d, _ := wce.(bson.D); !codeIn(d).IsNotPrimaryError() {
			return reply
		}
	}
	return append(reply, bson.E{Key: "topologyVersion", Value: h.topologyVersion()})
}

// codeIn is the code field of a reply or a writeConcernError (0 if none).
func codeIn(d bson.D) mongoerr.Code {
	v, _ := bsonutil.Field(d, "code")
	c, _ := v.(int32)
	return mongoerr.Code(c)
}

// awaitTopology waits, for an awaitable hello (topologyVersion and
// maxAwaitTimeMS), until the topology changes or maxAwaitTimeMS passes.
func (h *Handler) awaitTopology(r *request) error {
	tv, hasTV := bsonutil.Field(r.body, "topologyVersion")
	wait, hasWait := bsonutil.Field(r.body, "maxAwaitTimeMS")
	if hasTV != hasWait {
		return mongoerr.New(mongoerr.FailedToParse, "topologyVersion must be provided if and only if maxAwaitTimeMS is provided")
	}
	if !hasTV {
		return nil
	}
	ms, err := cmdargs.Int64(r.name, "maxAwaitTimeMS", wait)
	if err != nil || ms < 0 {
		return mongoerr.New(mongoerr.BadValue, "maxAwaitTimeMS must be a non-negative integer")
	}
	ch, counter := h.deps.Repl.TopologyChanges()
	d, _ := tv.(bson.D)
	pid, _ := bsonutil.Field(d, "processId")
	c, _ := bsonutil.Field(d, "counter")
	if pid != h.processID || c != counter {
		return nil
	}
	var draining <-chan struct{}
	if r.conn != nil {
		draining = r.conn.Draining()
	}
	defer h.waiting(r)()
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-r.ctx.Done():
	case <-draining:
	}
	return nil
}

// replyClusterTime adds operationTime and $clusterTime to a reply.
func (h *Handler) replyClusterTime(reply bson.D) bson.D {
	ts, _, _ := h.deps.Repl.OpTime()
	t := bson.Timestamp{T: ts.T, I: ts.I}
	return append(reply,
		bson.E{Key: "operationTime", Value: t},
		bson.E{Key: "$clusterTime", Value: bson.D{
			{Key: "clusterTime", Value: t},
			{Key: "signature", Value: bson.D{{Key: "hash", Value: bson.Binary{Data: make([]byte, 20)}}, {Key: "keyId", Value: int64(0)}}},
		}},
	)
}

// withReplStatus adds serverStatus's repl section on a replica set member.
func (h *Handler) withReplStatus(status bson.D) bson.D {
	if h.deps.Repl == nil {
		return status
	}
	return append(status, bson.E{Key: "repl", Value: h.deps.Repl.ServerStatus()}, bson.E{Key: "transactions", Value: txnrules.Status(h.txns.Stats())})
}
