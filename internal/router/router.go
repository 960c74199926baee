package router

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/activity"
	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/logring"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/opstats"
	"github.com/mayflydb/mayfly/internal/params"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// maxConnsPerHost bounds the router's connections to one shard or config
// server member. mongos's pool (ShardingTaskExecutorPoolMaxSize) has no
// bound: a client command holds at most one connection to a host at a
// time, so the clients' concurrency is the real bound. A lower one makes
// commands queue in the router while the shard, seeing fewer at once,
// commits its writes in smaller groups; this one only stops a runaway.
const maxConnsPerHost = 1024

// Config configures a Router.
type Config struct {
	// ConfigDB is the config server replica set: "setName/host:port,...".
	ConfigDB string
	// Client is how the router dials config servers and shards (TLS, the
	// keyFile's credential); MaxConnsPerHost 0 is maxConnsPerHost.
	Client wireclient.Options
	// RequireAuth turns access control on: a router with a keyFile, as
	// mongos, requires clients to log in as users stored on the config
	// servers (auth.go).
	RequireAuth bool
	// KeyFile is the cluster's key: clients may log in as its __system
	// user. Nil without one.
	KeyFile *auth.KeyFile
	// Version and GitVersion are what buildInfo answers.
	Version, GitVersion string
	// Host is this router's "host:port", its config.mongos _id.
	Host string
	// TestCommands is --setParameter enableTestCommands=1: the router's
	// fail points (failcommand.go).
	TestCommands bool
	// Argv and Parsed are what getCmdLineOpts answers; Log is the ring
	// of recent log lines getLog reads (nil: none kept).
	Argv   []string
	Parsed bson.D
	Log    *logring.Ring
	Clock  clock.Clock  // nil: the real clock
	Logger *slog.Logger // nil: slog.Default()
}

// Router is a Handler that routes commands to a sharded cluster.
type Router struct {
	cfg     Config
	log     *slog.Logger
	clock   clock.Clock
	client  *wireclient.Client
	config  *wireclient.ReplicaSet
	time    wireclient.ClusterClock
	catalog *catalog
	cursors *cursorTable
	auth    *auth.Manager
	params  *params.Table
	// ops are the router's own operations in flight (currentop.go).
	ops *activity.Registry
	// failPoints are the router's fail points; nil without TestCommands.
	failPoints *failpoint.Registry
	// opCounts are serverStatus's opcounters; serverStats its connections
	// and traffic (status.go).
	opCounts opstats.OpCounters
	stats    *opstats.Stats // opLatencies, asserts, metrics.commands
	// profiler holds slowms, which the profile command sets and the slow
	// operations' log reads (the router keeps no system.profile).
	profiler    *activity.Profiler
	serverStats func() server.Stats
	started     bson.DateTime
	// commands is commandTable and authCommands authCommandTable, built
	// once.
	commands, authCommands map[string]handlerFunc
	// signature is every $clusterTime's (clusterTimeDoc); never changed.
	signature bson.D

	processID bson.ObjectID // topologyVersion.processId
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// New returns a Router for the cluster whose config servers cfg names.
// It connects lazily; Start begins its background work.
func New(cfg Config) (*Router, error) {
	name, seeds, err := wireclient.ParseSetString(cfg.ConfigDB)
	if err != nil {
		return nil, fmt.Errorf("--configdb: %w", err)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Client.Clock = cfg.Clock
	if cfg.Client.MaxConnsPerHost <= 0 {
		cfg.Client.MaxConnsPerHost = maxConnsPerHost
	}
	client := wireclient.New(cfg.Client)
	r := &Router{cfg: cfg, log: cfg.Logger, clock: cfg.Clock, client: client,
		processID: bson.NewObjectID(), done: make(chan struct{}),
		started: bson.NewDateTimeFromTime(cfg.Clock.Now()), commands: commandTable(),
		authCommands: authCommandTable(), signature: unsignedSignature(), params: routerParams(),
		ops: activity.NewRegistry(cfg.Clock), stats: opstats.New(),
		profiler: activity.NewProfiler()}
	r.config = wireclient.NewReplicaSet(name, seeds, client, cfg.Clock)
	r.catalog = newCatalog(r)
	r.cursors = newCursorTable(cfg.Clock)
	r.auth = r.newAuth()
	if cfg.TestCommands {
		r.failPoints = failpoint.NewRegistry(uint64(cfg.Clock.Now().UnixNano()), failpoint.FailCommand, failpoint.FailGetMore)
	}
	return r, nil
}

// Close stops the background work and closes every connection.
func (r *Router) Close() error {
	r.closeOnce.Do(func() { close(r.done) })
	r.wg.Wait()
	if err := r.client.Close(); err != nil {
		return fmt.Errorf("router: %w", err)
	}
	return nil
}

// operation is one client command on its way through the router.
type operation struct {
	ctx  context.Context
	conn *server.Conn
	db   string
	name string
	body bson.D
	// opTime is the latest operationTime of the replies it used.
	opTime bson.Timestamp
}

type handlerFunc func(r *Router, op *operation) (bson.D, error)

// Handle runs one command.
func (r *Router) Handle(ctx context.Context, c *server.Conn, cmd *server.Command) bson.D {
	// A client's $clusterTime is not trusted: the router cannot check its
	// signature, and its clock stamps new metadata (database and
	// collection timestamps).
	op := &operation{ctx: ctx, conn: c, db: cmd.DB, name: cmd.Name, body: cmd.Body}
	r.opCounts.Start(op.name)
	began := r.clock.Now()
	id := r.beginOp(c, cmd, began)
	reply, err := r.dispatch(op)
	r.ops.End(id)
	err = killedError(ctx, err)
	r.record(op, reply, err, r.clock.Now().Sub(began))
	if err != nil {
		reply = mongoerr.Reply(err)
	} else {
		if _, ok := bsonutil.Field(reply, "ok"); !ok {
			reply = append(reply, bson.E{Key: "ok", Value: 1.0})
		}
		reply = r.failWriteConcern(op, reply)
	}
	if op.opTime.IsZero() {
		op.opTime = r.time.Now()
	}
	return r.appendGossip(reply, op.opTime, r.time.Now())
}

func (r *Router) dispatch(op *operation) (bson.D, error) {
	if err := r.authorize(op); err != nil {
		return nil, err
	}
	if err := refuseTransaction(op); err != nil {
		return nil, err
	}
	if err := r.failCommand(op); err != nil {
		// No shard saw the command: a retryable write may be retried.
		return labelRetryable(op, mongoerr.Reply(err)), nil
	}
	if h, ok := r.authCommands[op.name]; ok {
		return h(r, op)
	}
	if op.db == "config" && !isHandshake(op.name) {
		return forwardToConfig(r, op)
	}
	h, ok := r.commands[op.name]
	if !ok {
		return nil, mongoerr.Newf(mongoerr.CommandNotFound, "no such command: '%s'", op.name)
	}
	if err := adminOnly(op); err != nil {
		return nil, err
	}
	return r.runRefreshing(op, h)
}

// refuseTransaction refuses every command of a multi-document
// transaction, and the commands that end one: this router routes no
// transactions, and a statement passed on would leave each shard it
// reached an open transaction nobody commits.
func refuseTransaction(op *operation) error {
	inTxn := op.name == "commitTransaction" || op.name == "abortTransaction"
	for _, field := range []string{"startTransaction", "autocommit"} {
		if _, ok := bsonutil.Field(op.body, field); ok {
			inTxn = true
		}
	}
	if !inTxn {
		return nil
	}
	return mongoerr.Newf(mongoerr.OperationNotSupportedInTransaction,
		"Cannot run '%s' in a multi-document transaction: mayfly route does not route transactions", op.name)
}

// call sends cmd to a replica set's primary, keeping the reply's times.
func (r *Router) call(op *operation, rs *wireclient.ReplicaSet, db string, cmd bson.D) (bson.D, error) {
	reply, err := rs.Run(op.ctx, db, r.withClusterTime(cmd))
	if err != nil {
		return nil, err
	}
	r.observeReply(op, reply)
	return reply, nil
}

// observeReply keeps a remote reply's cluster time and operation time.
func (r *Router) observeReply(op *operation, reply bson.D) {
	r.time.Observe(reply)
	if t, ok := wireclient.OperationTime(reply); ok && op.opTime.Compare(t) < 0 {
		op.opTime = t
	}
}

// isGossipField names the fields of a remote reply that the router
// answers with its own values (or not at all).
func isGossipField(name string) bool {
	switch name {
	case "operationTime", "$clusterTime", "$configTime", "$topologyTime",
		"$gleStats", "lastCommittedOpTime", "$configServerState":
		return true
	}
	return false
}

// forwardable strips a remote reply of the fields the router sets itself.
func forwardable(reply bson.D) bson.D {
	out := make(bson.D, 0, len(reply))
	for _, e := range reply {
		if !isGossipField(e.Key) {
			out = append(out, e)
		}
	}
	return out
}
