package commands

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/repl"
	"github.com/mayflydb/mayfly/internal/shardcmds"
)

// The replica set commands, and what every command does differently on a
// replica set member: writes only on the primary, reads on a secondary
// only with a read preference that allows one, write and read concerns,
// and the cluster time in every reply. Without --replSet the replSet*
// commands answer NoReplicationEnabled, as mongod's do.

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

func errNoReplication() error {
	return mongoerr.New(mongoerr.NoReplicationEnabled, "This node was not started with replication enabled.")
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
			return replError(err)
		}
	case optInOnSecondary:
		// CheckRead refuses without the opt-in on any member but the
		// primary; with it, it also refuses on a member neither primary
		// nor secondary, and on a secondary whose clock is too far off
		// to tell what has expired, so only the reads of data call it so.
		ok := secondaryOk(r)
		if !ok || ro.needsPrimaryOrSecondary {
			if err := rs.CheckRead(ok); err != nil {
				return replError(err)
			}
		}
	}
	if ro.needsPrimaryOrSecondary {
		return replError(rs.CheckPrimaryOrSecondary())
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

// replError gives the replica set's errors MongoDB's codes.
func replError(err error) error {
	var cfgErr *repl.ConfigError
	var incompatible *repl.IncompatibleConfigError
	var offErr *repl.ClockOffsetError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &offErr):
		return mongoerr.New(mongoerr.NotPrimaryOrSecondary, offErr.Error())
	case errors.Is(err, repl.ErrNotPrimary):
		return mongoerr.New(mongoerr.NotWritablePrimary, "not primary")
	case errors.Is(err, repl.ErrNotPrimaryNoSecondaryOk):
		return mongoerr.New(mongoerr.NotPrimaryNoSecondaryOk, "not primary and secondaryOk=false")
	case errors.Is(err, repl.ErrNotPrimaryOrSecondary):
		return mongoerr.New(mongoerr.NotPrimaryOrSecondary, "node is not in primary or recovering state")
	case errors.Is(err, repl.ErrStateChange):
		return mongoerr.New(mongoerr.InterruptedDueToReplStateChange, "operation was interrupted because a replica set state change happened")
	case errors.Is(err, repl.ErrShutdown):
		return mongoerr.New(mongoerr.InterruptedAtShutdown, "interrupted at shutdown")
	case errors.Is(err, repl.ErrAlreadyInitialized):
		return mongoerr.New(mongoerr.AlreadyInitialized, "already initialized")
	case errors.Is(err, repl.ErrNotYetInitialized):
		return mongoerr.New(mongoerr.NotYetInitialized, "no replset config has been received")
	case errors.Is(err, repl.ErrNoCaughtUpSecondary):
		return mongoerr.New(mongoerr.ExceededTimeLimit, "No electable secondaries caught up as of the stepdown deadline. Please use the replSetStepDown command with the argument {force: true} to force node to step down.")
	case errors.Is(err, repl.ErrNotPrimaryOrSecondaryFreeze):
		return mongoerr.New(mongoerr.NotSecondary, err.Error())
	case errors.As(err, &cfgErr):
		return mongoerr.New(mongoerr.InvalidReplicaSetConfig, cfgErr.Msg)
	case errors.As(err, &incompatible):
		return mongoerr.New(mongoerr.NewReplicaSetConfigurationIncompatible, incompatible.Msg)
	}
	return err
}

func cmdReplSetInitiate(h *Handler, r *request) (bson.D, error) {
	rs := h.deps.Repl
	if rs == nil {
		return nil, errNoReplication()
	}
	v, _ := bsonutil.Field(r.body, r.name)
	cfg, _ := v.(bson.D)
	if len(cfg) == 0 {
		cfg = nil
	}
	if err := shardcmds.CheckConfigServerFlag(h.deps.ClusterRole, cfg); err != nil {
		return nil, err
	}
	if err := rs.Initiate(cfg); err != nil {
		return nil, replError(err)
	}
	return bson.D{}, nil
}

func cmdReplSetGetStatus(h *Handler, r *request) (bson.D, error) {
	if h.deps.Repl == nil {
		return nil, mongoerr.New(mongoerr.NoReplicationEnabled, "not running with --replSet")
	}
	st, err := h.deps.Repl.Status()
	return st, replError(err)
}

func cmdReplSetGetConfig(h *Handler, r *request) (bson.D, error) {
	rs := h.deps.Repl
	if rs == nil {
		return nil, errNoReplication()
	}
	c := rs.Config()
	if c == nil {
		return nil, replError(repl.ErrNotYetInitialized)
	}
	return bson.D{{Key: "config", Value: c.Doc()}}, nil
}

func cmdReplSetReconfig(h *Handler, r *request) (bson.D, error) {
	rs := h.deps.Repl
	if rs == nil {
		return nil, errNoReplication()
	}
	v, _ := bsonutil.Field(r.body, r.name)
	cfg, ok := v.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'replSetReconfig' is the wrong type, expected type 'object'")
	}
	if err := shardcmds.CheckConfigServerFlag(h.deps.ClusterRole, cfg); err != nil {
		return nil, err
	}
	return bson.D{}, replError(rs.Reconfig(cfg))
}

func cmdReplSetStepDown(h *Handler, r *request) (bson.D, error) {
	rs := h.deps.Repl
	if rs == nil {
		return nil, errNoReplication()
	}
	v, _ := bsonutil.Field(r.body, r.name)
	secs, err := cmdargs.Int64(r.name, r.name, v)
	if err != nil {
		return nil, err
	}
	catchUp, err := optInt(r, "secondaryCatchUpPeriodSecs", 10)
	if err != nil {
		return nil, err
	}
	if catchUp > secs {
		return nil, mongoerr.New(mongoerr.BadValue, "stepdown period must be longer than secondaryCatchUpPeriodSecs")
	}
	err = rs.StepDown(r.ctx, time.Duration(secs)*time.Second, time.Duration(catchUp)*time.Second)
	return bson.D{}, replError(err)
}

func cmdReplSetFreeze(h *Handler, r *request) (bson.D, error) {
	rs := h.deps.Repl
	if rs == nil {
		return nil, errNoReplication()
	}
	v, _ := bsonutil.Field(r.body, r.name)
	secs, err := cmdargs.Int64(r.name, r.name, v)
	if err != nil {
		return nil, err
	}
	return bson.D{}, replError(rs.Freeze(time.Duration(secs) * time.Second))
}

// cmdReplSetRaft takes raft messages from another member.
func cmdReplSetRaft(h *Handler, r *request) (bson.D, error) {
	if h.deps.Repl == nil {
		return nil, errNoReplication()
	}
	if err := h.deps.Repl.Receive(r.body); err != nil {
		return nil, mongoerr.New(mongoerr.InvalidReplicaSetConfig, err.Error())
	}
	return bson.D{}, nil
}

// cmdReplSetSnapshot takes a snapshot chunk from the primary.
func cmdReplSetSnapshot(h *Handler, r *request) (bson.D, error) {
	if h.deps.Repl == nil {
		return nil, errNoReplication()
	}
	if err := h.deps.Repl.ReceiveSnapshot(r.body); err != nil {
		return nil, mongoerr.New(mongoerr.OperationFailed, err.Error())
	}
	return bson.D{}, nil
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

// labelRetryable adds errorLabels to a retryable write's reply whose
// error, or write concern error, is retryable; labels already in the
// reply (a fail point's) are kept as they are.
func labelRetryable(r *request, reply bson.D) bson.D {
	if _, ok := bsonutil.Field(r.body, "txnNumber"); !ok || !isRetryableWrite(r.name) {
		return reply
	}
	if _, labelled := bsonutil.Field(reply, "errorLabels"); labelled {
		return reply
	}
	code, _ := bsonutil.Field(reply, "code")
	if wce, ok := bsonutil.Field(reply, "writeConcernError"); ok {
		wcDoc, _ := wce.(bson.D)
		code, _ = bsonutil.Field(wcDoc, "code")
	}
	if c, ok := code.(int32); !ok || !mongoerr.Code(c).IsRetriableError() {
		return reply
	}
	return append(reply, bson.E{Key: "errorLabels", Value: bson.A{"RetryableWriteError"}})
}

// writeConcern is a command's writeConcern as a replica set applies it.
type writeConcern struct {
	w        int  // members that must have the write (0: none, 1: this one)
	majority bool // w: "majority"
	wtimeout time.Duration
}

func parseWriteConcern(r *request) (writeConcern, error) {
	wc := writeConcern{w: 1}
	d, err := optDoc(r, "writeConcern")
	if err != nil || d == nil {
		return wc, err
	}
	if v, ok := bsonutil.Field(d, "w"); ok {
		switch w := v.(type) {
		case string:
			if w != "majority" {
				return wc, mongoerr.Newf(mongoerr.UnknownReplWriteConcern, "No write concern mode named '%s' found in replica set configuration", w)
			}
			wc.majority = true
		default:
			n, err := cmdargs.Int64("writeConcern", "w", v)
			if err != nil || n < 0 {
				return wc, mongoerr.New(mongoerr.FailedToParse, "w has to be a non-negative number and not greater than 50; or a string")
			}
			wc.w = int(n)
		}
	}
	if v, ok := bsonutil.Field(d, "wtimeout"); ok {
		ms, err := cmdargs.Int64("writeConcern", "wtimeout", v)
		if err != nil {
			return wc, err
		}
		wc.wtimeout = time.Duration(ms) * time.Millisecond
	}
	return wc, nil
}

// awaitWriteConcern waits until the write concern is met after a write on
// the primary; a failure becomes the reply's writeConcernError. Every
// acknowledged write is already committed by a majority and applied here,
// so only w greater than that waits.
func (h *Handler) awaitWriteConcern(ctx context.Context, r *request, reply bson.D) bson.D {
	if !h.isWrite(r.name) {
		return reply
	}
	wc, err := parseWriteConcern(r)
	if err != nil || wc.w <= 1 || wc.majority {
		return reply
	}
	err = h.deps.Repl.WaitForMembers(ctx, wc.w, wc.wtimeout)
	switch {
	case err == nil:
		return reply
	case errors.Is(err, repl.ErrWriteConcernTimeout):
		return append(reply, bson.E{Key: "writeConcernError", Value: bson.D{
			{Key: "code", Value: int32(mongoerr.WriteConcernTimeout)}, {Key: "codeName", Value: mongoerr.WriteConcernTimeout.Name()},
			{Key: "errmsg", Value: "waiting for replication timed out"}, {Key: "errInfo", Value: bson.D{{Key: "wtimeout", Value: true}}},
		}})
	case errors.Is(err, repl.ErrUnsatisfiableWriteConcern):
		return append(reply, bson.E{Key: "writeConcernError", Value: bson.D{
			{Key: "code", Value: int32(mongoerr.UnsatisfiableWriteConcern)}, {Key: "codeName", Value: mongoerr.UnsatisfiableWriteConcern.Name()},
			{Key: "errmsg", Value: "Not enough data-bearing nodes"},
		}})
	}
	me := mongoerr.As(replError(err))
	return append(reply, bson.E{Key: "writeConcernError", Value: bson.D{
		{Key: "code", Value: int32(me.Code)}, {Key: "codeName", Value: me.Code.Name()}, {Key: "errmsg", Value: me.Msg},
	}})
}

// awaitReadConcern makes a read see what its read concern asks for:
// linearizable confirms leadership with a majority and waits for the
// commit point; afterClusterTime waits for that time to be applied.
func (h *Handler) awaitReadConcern(r *request) error {
	d, err := optDoc(r, "readConcern")
	if err != nil || d == nil {
		return err
	}
	level, _ := bsonutil.Field(d, "level")
	if level == "linearizable" {
		if err := h.deps.Repl.ReadLinearizable(r.ctx); err != nil {
			return replError(err)
		}
	}
	if v, ok := bsonutil.Field(d, "afterClusterTime"); ok {
		ts, ok := v.(bson.Timestamp)
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "afterClusterTime must be a timestamp")
		}
		if err := h.deps.Repl.WaitForTimestamp(r.ctx, changestream.Timestamp{T: ts.T, I: ts.I}); err != nil {
			return interruptError(err)
		}
	}
	return nil
}

// cmdReplPartition is a test command (enableTestCommands): the member
// drops every message to and from the members listed, until called with
// none.
func cmdReplPartition(h *Handler, r *request) (bson.D, error) {
	if !h.deps.TestCommands {
		return nil, mongoerr.Newf(mongoerr.CommandNotFound, "no such command: '%s'", r.name)
	}
	if h.deps.Repl == nil {
		return nil, errNoReplication()
	}
	v, _ := bsonutil.Field(r.body, r.name)
	arr, _ := v.(bson.A)
	var hosts []string
	for _, x := range arr {
		if s, ok := x.(string); ok {
			hosts = append(hosts, s)
		}
	}
	h.deps.Repl.Partition(hosts)
	return bson.D{}, nil
}

// withReplStatus adds serverStatus's repl section on a replica set member.
func (h *Handler) withReplStatus(status bson.D) bson.D {
	if h.deps.Repl == nil {
		return status
	}
	return append(status, bson.E{Key: "repl", Value: h.deps.Repl.ServerStatus()}, bson.E{Key: "transactions", Value: h.transactionsStatus()})
}

// RetryableWrites are the commands mongod retries as retryable writes
// (and labels RetryableWriteError): the document writes whose replies
// drivers inspect most closely.
func RetryableWrites() []string {
	return []string{"insert", "update", "delete", "findAndModify", "bulkWrite"}
}

func isRetryableWrite(name string) bool {
	for _, n := range append([]string{name}, commandAliases[name]...) {
		if slices.Contains(RetryableWrites(), n) {
			return true
		}
	}
	return false
}
