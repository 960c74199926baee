// Package commands implements MongoDB's commands over the docstore: the
// command table, and one handler per command that parses its arguments
// (internal/cmdargs), calls the layers below and builds MongoDB's reply
// shape. The replica set's commands (internal/replcmds), a shard
// member's internal ones (internal/shardcmds) and the rules of
// transaction statements (internal/txnrules) are packages of their own,
// which the table and the handlers call.
package commands

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/activity"
	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/backup"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/buildwatch"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/configsvr"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/cursor/paging"
	"github.com/mayflydb/mayfly/internal/docmove"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/logring"
	"github.com/mayflydb/mayfly/internal/maxtime"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/nsjoin"
	"github.com/mayflydb/mayfly/internal/opstats"
	"github.com/mayflydb/mayfly/internal/params"
	"github.com/mayflydb/mayfly/internal/repl"
	"github.com/mayflydb/mayfly/internal/replcmds"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/shardcmds"
	"github.com/mayflydb/mayfly/internal/shardstate"
	"github.com/mayflydb/mayfly/internal/snaphistory"
	"github.com/mayflydb/mayfly/internal/txnrules"
	"github.com/mayflydb/mayfly/internal/writeops"
)

// Deps are what the handlers need from the rest of the server.
type Deps struct {
	Store   *docstore.Store
	Cursors *cursor.Registry
	Clock   clock.Clock
	Logger  *slog.Logger
	Params  *params.Table
	// Argv is the command line, for getCmdLineOpts.
	Argv []string
	// Parsed is the effective configuration, for getCmdLineOpts.
	Parsed bson.D
	// ServerStats reports connection counts; may be nil in tests.
	ServerStats func() server.Stats
	// TTLStats reports the TTL monitor's counters; may be nil.
	TTLStats func() TTLStats
	// Activity tracks operations in flight, by Clock; New makes one when nil.
	Activity *activity.Registry
	// Profiler holds profiling levels; New makes one when nil.
	Profiler *activity.Profiler
	// Repl is this server's replica set membership; nil for a standalone.
	Repl *repl.Replica
	// TestCommands is enableTestCommands: commands that inject faults.
	TestCommands bool
	// Changes is the change log change streams read; nil: none, and
	// $changeStream answers as mongod does where it has none.
	Changes *changestream.Feed

	// Operations: statistics, the log ring, the data directory (empty in
	// memory) and the fsync lock.
	OpStats *opstats.Stats // New makes one when nil
	Log     *logring.Ring  // getLog; may be nil
	DataDir string
	Fsync   *backup.Lock // New makes one when nil
	// Auth holds users and roles and authorizes commands; New makes one
	// with access control off when nil.
	Auth *auth.Manager
	// ReplicaSetMember is set when the server is a replica set member; a
	// standalone refuses write concerns that need other members.
	ReplicaSetMember bool
	// ClusterRole is "configsvr" or "shardsvr" (--configsvr, --shardsvr);
	// Shard is a shard member's cluster state (see shardside.go).
	ClusterRole string
	Shard       *shardstate.State
	// Migrations is a shard member's side of chunk migration; ConfigServer
	// a config server member's commits and balancer (internal/shardcmds).
	Migrations   *shardstate.Migrations
	ConfigServer *configsvr.Service
	// DocumentMoves is a shard member's moves of documents whose shard
	// key an update changed.
	DocumentMoves *docmove.Mover
	// FailPoints, when set, is the fail point registry the handler shares
	// with background work (migrations); with enableTestCommands and none
	// given the handler makes its own.
	FailPoints *failpoint.Registry
	// Transactions is the sessions' multi-document transactions (a
	// replica set member's; nil makes a table of the handler's own).
	Transactions *session.Transactions
	// Snapshots keeps the snapshots of snapshot reads outside
	// transactions (nil makes the handler's own over Store).
	Snapshots *snaphistory.History
}

// TTLStats are serverStatus().metrics.ttl.
type TTLStats struct {
	Passes, SubPasses, DeletedDocuments, DeletedKeys int64
	// CatchUpBatches counts the deletion batches after which the monitor
	// did not rest, catching up with a storm it had fallen behind.
	CatchUpBatches int64
}

// Handler runs commands; it implements server.Handler.
type Handler struct {
	deps  Deps
	table map[string]command
	// steady is deps.Clock without the test clock's offset: durations
	// (opLatencies, the profiler's millis) and the logical sessions'
	// lifetime, which moving the clock to expire documents must not bend.
	steady    clock.Clock
	started   time.Time
	processID bson.ObjectID
	opCounts  opstats.OpCounters
	// builds shows createIndexes' builds in currentOp and holds them at
	// their fail point.
	builds   *buildwatch.Watcher
	emptyTs  docstore.EmptyTimestamps
	sessions *session.Cache
	// checkouts holds each session's retryable write while it runs
	// (retry.go).
	checkouts session.Checkouts
	// failPoints are the fail points configureFailPoint sets (nil without
	// enableTestCommands).
	failPoints *failpoint.Registry
	// streams is what the change streams share (nil without a change
	// log).
	streams *changestream.Streams
	// replMember is the replica set member, for the replSet* commands
	// and the write and read concerns (replset.go).
	replMember replcmds.Member
	// shard is the member's parts of a sharded cluster, for the internal
	// commands and routed commands' versions (shardside.go).
	shard shardcmds.Services
	// txns is the sessions' transactions (txn.go).
	txns *session.Transactions
	// snapshots is the snapshot reads' history (snapshotread.go).
	snapshots *snaphistory.History
	// now is deps.Clock.Now, made once: a method value made per write
	// (writeOp) would be an allocation each time.
	now func() time.Time
	// names are the namespaces requests name, joined once (request.names).
	names nsjoin.Cache
}

// request is one command invocation.
type request struct {
	ctx  context.Context
	conn *server.Conn
	db   string
	name string
	body bson.D
	// opID is the operation's entry in the activity registry (0: none).
	opID  int64
	began time.Time // by the real clock, as Handle began it (zero: not known)
	// secret is the body as sent, passwords included; body has them masked
	// for everything that may show it (currentOp, profiler, errors).
	secret bson.D
	// live is what a cursor from this request re-checks before each
	// getMore: its scans, its sorted results, its context.
	live paging.Live
	// refreshReads: an aggregate that returns the documents its leading
	// $match passes on, so they refresh their refreshOnRead dates.
	refreshReads bool
	// txn is the transaction the command is a statement of (txn.go).
	txn *inTransaction
	// snapshot is the snapshot a read with readConcern snapshot reads
	// outside a transaction (snapshotread.go).
	snapshot *snapshotRead
	// handled is what Handle allocated the request in, with parts that
	// the request's command claims once each (handled.go); nil for a
	// request made otherwise.
	handled *handled
	// names joins namespace's "db.coll" (nil: namespace joins its own).
	names *nsjoin.Cache
	// ns and op are made on first use (namespace, Handler.writeOp); nsv
	// is ns in an interface when the Handler keeps it (boxedNamespace).
	ns  string
	nsv any
	op  writeops.Op
}

// New returns a Handler with the full command table.
func New(deps Deps) *Handler {
	if deps.Clock == nil {
		deps.Clock = clock.Real{}
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Params == nil {
		deps.Params = params.New()
	}
	if deps.Activity == nil {
		deps.Activity = activity.NewRegistry(deps.Clock)
	}
	if deps.Profiler == nil {
		deps.Profiler = activity.NewProfiler()
	}
	if deps.OpStats == nil {
		deps.OpStats = opstats.New()
	}
	if deps.Fsync == nil {
		deps.Fsync = backup.NewLock()
	}
	if deps.Auth == nil {
		deps.Auth = auth.Disabled(deps.Store, deps.Logger)
	}
	h := &Handler{deps: deps, steady: clock.Unoffset(deps.Clock), started: deps.Clock.Now(), processID: bson.NewObjectID(), sessions: session.NewCache(session.MaxSessions), txns: deps.Transactions}
	h.now = deps.Clock.Now
	if h.snapshots = deps.Snapshots; h.snapshots == nil && deps.Store != nil {
		h.snapshots = snaphistory.New(deps.Store, h.steady)
	}
	if h.txns == nil {
		h.txns = session.NewTransactions(h.steady)
	}
	if deps.Changes != nil {
		h.streams = changestream.NewStreams(deps.Changes, paging.StreamHost{Store: deps.Store}, deps.Clock)
	}
	h.replMember = replcmds.Member{Repl: deps.Repl, ClusterRole: deps.ClusterRole, TestCommands: deps.TestCommands}
	h.shard = shardcmds.Services{Shard: deps.Shard, Migrations: deps.Migrations, Mover: deps.DocumentMoves, ConfigServer: deps.ConfigServer}
	h.table = buildTable(deps.TestCommands)
	if deps.TestCommands {
		h.failPoints = deps.FailPoints
		if h.failPoints == nil {
			h.failPoints = failpoint.NewRegistry(uint64(h.started.UnixNano()), failpoint.Names()...)
		}
	}
	h.builds = buildwatch.New(deps.Activity, h.failPoints)
	return h
}

// replyRoom is the room a handler leaves at the end of a frequent reply
// for the fields Handle appends: ok, and on a replica set member
// $clusterTime and operationTime. Then Handle's appends reuse the reply's
// array instead of copying it.
const replyRoom = 3

// Handle runs one command and returns its reply document.
func (h *Handler) Handle(ctx context.Context, c *server.Conn, cmd *server.Command) bson.D {
	hr := newHandled(cmd.Name)
	r := &hr.req // zero: set field by field, not copied whole with a write barrier per pointer slot
	r.ctx, r.conn, r.db, r.name, r.body, r.secret, r.handled, r.names = ctx, c, cmd.DB, cmd.Name, auth.Redact(cmd.Body), cmd.Body, hr, &h.names
	entry, ok := h.table[cmd.Name]
	if !ok {
		h.opCounts.Command.Add(1)
		return mongoerr.Reply(mongoerr.Newf(mongoerr.CommandNotFound, "no such command: '%s'", cmd.Name))
	}
	h.opCounts.Start(cmd.Name)
	if err := checkAPIParameters(r, entry); err != nil {
		return mongoerr.Reply(err)
	}
	if err := h.deps.Auth.Authorize(c, cmd.DB, entry.name, cmd.Body); err != nil {
		return mongoerr.Reply(err)
	}
	// A clock reading at each end serves session use, latency, currentOp, maxTimeMS.
	begun := h.steady.Now()
	r.began = clock.RealReading(h.steady, begun)
	if err := h.touchSession(r, begun); err != nil {
		return mongoerr.Reply(err)
	}
	cancel := killable(r, cmd) // killOp's handle on the operation
	defer cancel(nil)
	r.opID = h.beginOp(r, cancel, clock.At(h.deps.Clock, begun))
	done := h.deps.OpStats.Begin(opstats.ClassOf(cmd.Name))
	reply, err := h.runRecovering(entry, r)
	h.countWrites(r, reply, err)
	done()
	ended := h.steady.Now()
	h.deps.Activity.EndAt(r.opID, clock.At(h.deps.Clock, ended))
	took := ended.Sub(begun)
	h.recordStats(r, took, err)
	h.deps.Auth.AfterCommand(r.db, r.name, r.body)
	if err != nil {
		reply = mongoerr.Reply(clientError(err))
	} else {
		h.recordCursorOwner(r, reply)
		reply = append(h.failWriteConcern(r, reply), bson.E{Key: "ok", Value: 1.0})
	}
	if h.deps.Repl != nil {
		reply = h.replicaReply(r, reply, err)
	}
	h.profile(r, took, reply)
	return reply
}

// replicaReply finishes a replica set member's reply: the write concern,
// the retryable-write label on errors, the topologyVersion on state
// change errors, the cluster time.
func (h *Handler) replicaReply(r *request, reply bson.D, err error) bson.D {
	if err == nil {
		reply = h.awaitWriteConcern(r, reply)
	}
	if txnrules.IsStatement(r.body) {
		reply = txnrules.LabelTransaction(r.name, reply, err)
	} else {
		reply = txnrules.LabelRetryable(h.table[r.name].name, r.body, reply)
	}
	return h.replyClusterTime(h.withTopologyVersion(reply))
}

func (h *Handler) run(entry command, r *request) (reply bson.D, err error) {
	if r.db == "" {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$db' is missing but a required field")
	}
	if err := checkGeneric(r, h.deps.Repl != nil); err != nil {
		return nil, err
	}
	if err := h.observeClusterTime(r); err != nil {
		return nil, err
	}
	mt, err := withMaxTime(r)
	if err != nil {
		return nil, err
	}
	if mt != nil {
		defer mt.Release()
		r.ctx = mt
	}
	// Before the transaction, as mongod: a statement the fail point fails
	// neither starts nor aborts its transaction.
	if err := h.failCommand(r); err != nil {
		return nil, err
	}
	if err := h.enterTransaction(r); err != nil {
		return nil, err
	}
	defer func() { reply, err = h.leaveTransaction(r, reply, err) }()
	release, err := h.checkOutSession(r)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := h.beginSnapshotRead(r); err != nil {
		return nil, err
	}
	defer func() {
		if err == nil {
			reply = withAtClusterTime(r, reply)
		}
	}()
	if err := cmdargs.CheckTypes(entry.name, r.body); err != nil {
		return nil, err
	}
	if err := h.checkRole(r, entry.role); err != nil {
		return nil, err
	}
	if err := r.args().CheckWriteConcernReach(h.deps.ReplicaSetMember); err != nil {
		return nil, err
	}
	if err := h.waitForWrites(r); err != nil {
		return nil, err
	}
	reply, leave, err := h.checkShardVersion(r)
	defer leave()
	if reply != nil || err != nil {
		return reply, err
	}
	if h.deps.Repl != nil && entry.readConcern {
		if err := h.awaitReadConcern(r); err != nil {
			return nil, err
		}
	}
	return entry.run(h, r)
}

// withMaxTime applies maxTimeMS to the command's context: the context
// with its deadline, to release when the command returns, or nil when
// there is no maxTimeMS (or it is 0).
func withMaxTime(r *request) (*maxtime.Context, error) {
	v, ok := bsonutil.Field(r.body, "maxTimeMS")
	if !ok {
		return nil, nil
	}
	ms, err := cmdargs.MaxTimeMS(v)
	if err != nil || ms == 0 {
		return nil, err
	}
	return maxtime.NewAt(r.ctx, r.began, time.Duration(ms)*time.Millisecond, r.handled.takeMaxTime()), nil
}

// checkInterrupt turns an expired maxTimeMS into MongoDB's error.
func checkInterrupt(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	if ctx.Err() == context.DeadlineExceeded {
		return mongoerr.New(mongoerr.MaxTimeMSExpired, "operation exceeded time limit")
	}
	return interruptCause(ctx)
}

// checkGeneric rejects generic fields whose features Mayfly lacks, instead
// of silently ignoring them.
// On a replica set member txnNumber is accepted for retryable writes and
// transactions (txn.go); a standalone refuses both, as mongod does.
func checkGeneric(r *request, replicaSet bool) error {
	for _, e := range r.body {
		switch e.Key {
		case "startTransaction", "autocommit", "txnNumber":
			if !replicaSet {
				return mongoerr.New(mongoerr.IllegalOperation, "Transaction numbers are only allowed on a replica set member or mongos")
			}
		}
	}
	return nil
}

// SetServerStats connects serverStatus to the network server's counters
// once the server exists.
func (h *Handler) SetServerStats(f func() server.Stats) { h.deps.ServerStats = f }

// interruptError turns a context that ended inside a lower layer (a scan
// stopped by maxTimeMS or shutdown) into MongoDB's error for it.
func interruptError(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return mongoerr.New(mongoerr.MaxTimeMSExpired, "operation exceeded time limit")
	case errors.Is(err, context.Canceled):
		return mongoerr.New(mongoerr.Interrupted, "operation was interrupted")
	}
	return err
}
