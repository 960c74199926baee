package router

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/txnrules"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// The router's failCommand fail point, as mongos has one: with
// --setParameter enableTestCommands=1, configureFailPoint sets it, and it
// fails, holds or cuts the router's own commands, so that a driver's
// retries can be tested against a router as against a mongod.

// appNameKey holds a connection's appName from its first hello.
const appNameKey = "appName"

// cmdConfigureFailPoint sets a fail point of the router; without test
// commands it is no command, as on mongos.
func cmdConfigureFailPoint(r *Router, op *operation) (bson.D, error) {
	if r.failPoints == nil {
		return nil, mongoerr.Newf(mongoerr.CommandNotFound, "no such command: '%s'", op.name)
	}
	if op.db != "admin" {
		return nil, mongoerr.Newf(mongoerr.Unauthorized, "%s may only be run against the admin database.", op.name)
	}
	name, _ := op.body[0].Value.(string)
	entered, err := r.failPoints.Configure(name, op.body)
	if err != nil {
		return nil, err
	}
	r.log.Warn("Set failpoint", "failPointName", name)
	return bson.D{{Key: "count", Value: entered}}, nil
}

// failCommand consults failCommand once, before the command runs.
func (r *Router) failCommand(op *operation) error {
	if r.failPoints == nil || !r.failPoints.On(failpoint.FailCommand) {
		return nil
	}
	var hangUp func()
	if op.conn != nil {
		hangUp = op.conn.HangUp
	}
	return r.failPoints.FailBefore(op.ctx, r.failCall(op), failpoint.Before{Clock: r.clock, Logger: r.log, HangUp: hangUp,
		Interrupted: func(context.Context) error { return mongoerr.New(mongoerr.Interrupted, "operation was interrupted") }})
}

// failGetMore consults failGetMoreAfterCursorCheckout for a getMore that
// has checked out c: its error kills the cursor, on the router and on
// the shards, and a change stream's is labelled resumable, as on mongos.
func (r *Router) failGetMore(op *operation, c *routerCursor) error {
	if r.failPoints == nil || !r.failPoints.On(failpoint.FailGetMore) {
		return nil
	}
	call := r.failCall(op)
	call.Namespace = c.ns
	err, ok := r.failPoints.GetMoreFailure(call)
	if !ok {
		return nil
	}
	r.cursors.checkIn(c, true)
	r.killRemote(op, c)
	if c.stream != nil {
		return changestream.ResumableError(err)
	}
	return err
}

// failWriteConcern gives a write's successful reply the fail point's
// writeConcernError and errorLabels.
func (r *Router) failWriteConcern(op *operation, reply bson.D) bson.D {
	if r.failPoints == nil || !takesWriteConcern(op.name) || wireclient.MongoError(reply) != nil {
		return reply
	}
	return r.failPoints.FailWriteConcern(r.failCall(op), reply)
}

// takesWriteConcern names the router's commands that write.
func takesWriteConcern(name string) bool {
	switch name {
	case "insert", "update", "delete", "findAndModify", "findandmodify", "bulkWrite",
		"create", "createIndexes", "dropIndexes", "collMod", "drop", "dropDatabase":
		return true
	}
	return false
}

// failCall is what failCommand matches a command by.
func (r *Router) failCall(op *operation) failpoint.Call {
	call := failpoint.Call{Names: []string{op.name}, Namespace: op.db}
	if coll, ok := op.body[0].Value.(string); ok {
		call.Namespace = op.db + "." + coll
	}
	name, known := "", false
	if op.conn != nil {
		name, known = op.conn.Value(appNameKey).(string)
	}
	if !known {
		name = helloAppName(op.body) // the first hello names it
	}
	call.AppName = name
	return call
}

// rememberAppName keeps the appName of a connection's first hello.
func rememberAppName(op *operation) {
	if op.conn == nil || op.conn.Value(appNameKey) != nil {
		return
	}
	op.conn.SetValue(appNameKey, helloAppName(op.body))
}

func helloAppName(hello bson.D) string {
	v, _ := bsonutil.LookupPath(hello, "client.application.name")
	name, _ := v.(string)
	return name
}

// labelRetryable gives a retryable write's retryable error the label
// drivers retry on, as a mongod does. The router gives it only to a fail
// point's error, raised before any shard saw the command: after routing
// it cannot know whether a shard applied the write, and the shards label
// their own errors.
func labelRetryable(op *operation, reply bson.D) bson.D {
	return txnrules.LabelRetryable(op.name, op.body, reply)
}
