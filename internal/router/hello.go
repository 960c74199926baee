package router

import (
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/diag"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/params"
	"github.com/mayflydb/mayfly/internal/wire"
)

// The handshake's fixed answers: 8.0's wire version and session timeout.
const (
	maxWireVersion        = 25
	sessionTimeoutMinutes = 30
)

// isHandshake names the commands a client may send before logging in.
func isHandshake(name string) bool {
	switch name {
	case "hello", "isMaster", "ismaster", "ping", "buildInfo", "buildinfo", "endSessions",
		"saslStart", "saslContinue", "authenticate", "logout", "whatsmyuri", "connectionStatus":
		return true
	}
	return false
}

// cmdHello answers hello and isMaster as mongos (mongos_hello_response):
// msg "isdbgrid" is what makes a driver see a router, and no replica-set
// field may appear, or the driver takes the router for a set member.
func cmdHello(r *Router, op *operation) (bson.D, error) {
	if err := r.awaitHello(op); err != nil {
		return nil, err
	}
	rememberAppName(op)
	var reply bson.D
	if v, ok := bsonutil.Field(op.body, "helloOk"); ok && v == true {
		reply = append(reply, bson.E{Key: "helloOk", Value: true})
	}
	primaryKey := "ismaster"
	if op.name == "hello" {
		primaryKey = "isWritablePrimary"
	}
	reply = append(reply,
		bson.E{Key: primaryKey, Value: true},
		bson.E{Key: "msg", Value: "isdbgrid"},
		bson.E{Key: "topologyVersion", Value: r.topologyVersion()},
		bson.E{Key: "maxBsonObjectSize", Value: int32(wire.MaxBSONObjectSize)},
		bson.E{Key: "maxMessageSizeBytes", Value: int32(wire.MaxMessageSize)},
		bson.E{Key: "maxWriteBatchSize", Value: int32(wire.MaxWriteBatchSize)},
		bson.E{Key: "localTime", Value: bson.NewDateTimeFromTime(r.clock.Now())},
		bson.E{Key: "logicalSessionTimeoutMinutes", Value: int32(sessionTimeoutMinutes)},
		bson.E{Key: "connectionId", Value: int32(op.conn.ID())},
		bson.E{Key: "maxWireVersion", Value: int32(maxWireVersion)},
		bson.E{Key: "minWireVersion", Value: int32(0)},
	)
	reply = append(reply, r.authHelloFields(op)...)
	return append(reply, op.conn.CompressionReply(op.body)...), nil
}

// topologyVersion never changes: a router's hello answer is the same
// for its whole life.
func (r *Router) topologyVersion() bson.D {
	return bson.D{{Key: "processId", Value: r.processID}, {Key: "counter", Value: int64(0)}}
}

// awaitHello makes an awaitable hello (topologyVersion and
// maxAwaitTimeMS) wait its time out, since a router's topology does not
// change; one of the two without the other is refused as mongod does.
func (r *Router) awaitHello(op *operation) error {
	tv, hasTV := bsonutil.Field(op.body, "topologyVersion")
	wait, hasWait := bsonutil.Field(op.body, "maxAwaitTimeMS")
	if hasTV != hasWait {
		return mongoerr.New(mongoerr.FailedToParse, "topologyVersion must be provided if and only if maxAwaitTimeMS is provided")
	}
	if !hasTV {
		return nil
	}
	d, _ := tv.(bson.D)
	if pid, _ := bsonutil.Field(d, "processId"); pid != r.processID {
		return nil // another process's version: answer at once
	}
	ms := toInt64(wait)
	if ms < 0 {
		return mongoerr.New(mongoerr.BadValue, "maxAwaitTimeMS must be a non-negative integer")
	}
	t := r.clock.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C():
	case <-op.ctx.Done():
	case <-op.conn.Draining():
	case <-r.done:
	}
	return nil
}

func cmdOK(*Router, *operation) (bson.D, error) { return bson.D{}, nil }

func cmdBuildInfo(r *Router, _ *operation) (bson.D, error) {
	return diag.BuildInfo(r.cfg.Version, r.cfg.GitVersion), nil
}

// The router's own process: its log, its arguments, its machine, its
// commands.
func cmdGetLog(r *Router, op *operation) (bson.D, error) {
	return diag.GetLog(r.cfg.Log, op.body[0].Value)
}

func cmdGetCmdLineOpts(r *Router, _ *operation) (bson.D, error) {
	return diag.CmdLineOpts(r.cfg.Argv, r.cfg.Parsed), nil
}

func cmdHostInfo(r *Router, _ *operation) (bson.D, error) { return diag.HostInfo(r.clock.Now()), nil }

func cmdListCommands(r *Router, _ *operation) (bson.D, error) {
	var cmds []diag.CommandInfo
	for _, table := range []map[string]handlerFunc{r.commands, r.authCommands} {
		for name := range table {
			cmds = append(cmds, diag.CommandInfo{Name: name, AdminOnly: isAdminOnly(name)})
		}
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return diag.ListCommands(cmds), nil
}

// cmdGetParameter answers getParameter from the router's own table.
func cmdGetParameter(r *Router, op *operation) (bson.D, error) {
	return r.params.GetCommand(op.body[0].Value, cmdargs.Named(op.body))
}

// cmdSetParameter answers setParameter; the router's parameters are
// read-only, so it refuses each as mongod refuses one it lacks.
func cmdSetParameter(r *Router, op *operation) (bson.D, error) {
	return r.params.SetCommand(cmdargs.Named(op.body))
}

// routerParams is the router's parameter table: what drivers and mongosh
// ask a mongos for.
func routerParams() *params.Table {
	t := params.New()
	t.Register("logicalSessionTimeoutMinutes", params.Fixed(int32(sessionTimeoutMinutes)))
	return t
}

func cmdWhatsMyURI(_ *Router, op *operation) (bson.D, error) {
	return bson.D{{Key: "you", Value: op.conn.RemoteAddr()}}, nil
}
