package commands

import (
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/failpoint"
)

// clientMetadata is what a connection's first hello said about its client.
type clientMetadata struct{ appName string }

// commandAliases are the other names of commands with more than one; a
// failCommand entry names a command by any of them, as on mongod.
var commandAliases = map[string][]string{
	"isMaster": {"ismaster"}, "ismaster": {"isMaster"},
	"buildInfo": {"buildinfo"}, "buildinfo": {"buildInfo"},
	"findAndModify": {"findandmodify"}, "findandmodify": {"findAndModify"},
	"dropIndexes": {"deleteIndexes"}, "deleteIndexes": {"dropIndexes"},
	"dbHash": {"dbhash"}, "dbhash": {"dbHash"},
}

// cmdConfigureFailPoint is configureFailPoint (registered only with
// enableTestCommands): it sets a fail point and answers how many times
// the point had fired.
func cmdConfigureFailPoint(h *Handler, r *request) (bson.D, error) {
	if err := requireAdmin(r); err != nil {
		return nil, err
	}
	name, _ := r.body[0].Value.(string)
	entered, err := h.failPoints.Configure(name, r.body)
	if err != nil {
		return nil, err
	}
	mode, _ := bsonutil.Field(r.body, "mode")
	data, _ := bsonutil.Field(r.body, "data")
	h.deps.Logger.Warn("Set failpoint", "failPointName", name,
		"mode", bsonutil.Format(bson.D{{Key: "mode", Value: mode}, {Key: "data", Value: data}}))
	return bson.D{{Key: "count", Value: intOrLong(entered)}}, nil
}

func intOrLong(n int64) any {
	if n == int64(int32(n)) {
		return int32(n)
	}
	return n
}

// failCommand consults the failCommand fail point once, before the
// command runs (failpoint.Registry.FailBefore).
func (h *Handler) failCommand(r *request) error {
	if !h.failCommandOn() {
		return nil // before anything is built: every command asks
	}
	var hangUp func()
	if r.conn != nil {
		hangUp = r.conn.HangUp
	}
	return h.failPoints.FailBefore(r.ctx, h.failCall(r), failpoint.Before{
		Clock: h.steady, Logger: h.deps.Logger, HangUp: hangUp, Interrupted: checkInterrupt})
}

// failWriteConcern gives a successful command's reply the fail point's
// writeConcernError (and its errorLabels), for commands that take a
// write concern.
func (h *Handler) failWriteConcern(r *request, reply bson.D) bson.D {
	if !h.failCommandOn() || !h.takesWriteConcern(r) {
		return reply
	}
	return h.failPoints.FailWriteConcern(h.failCall(r), reply)
}

// takesWriteConcern reports whether the command is a write, which is
// what accepts a write concern (aggregate: with $out or $merge).
func (h *Handler) takesWriteConcern(r *request) bool {
	if r.name == "aggregate" {
		t, err := writeStage(r)
		return err == nil && t != nil
	}
	return h.isWrite(r.name)
}

// failCommandOn reports whether failCommand may fire: test commands
// enabled and the point configured.
func (h *Handler) failCommandOn() bool {
	return h.failPoints != nil && h.failPoints.On(failpoint.FailCommand)
}

// failGetMore consults failGetMoreAfterCursorCheckout for a getMore that
// has checked out cursor c: the error kills the cursor, and a change
// stream's is labelled as any error of the stream is.
func (h *Handler) failGetMore(r *request, c *cursor.Cursor) error {
	if h.failPoints == nil || !h.failPoints.On(failpoint.FailGetMore) {
		return nil
	}
	call := h.failCall(r)
	call.Namespace = c.NS
	err, ok := h.failPoints.GetMoreFailure(call)
	if !ok {
		return nil
	}
	h.deps.Cursors.Remove(c.ID)
	if _, stream := c.Source.(*changestream.Stream); stream {
		return changestream.ResumableError(err)
	}
	return err
}

// transactionalWriteCheck is the check a retryable write makes as its
// statements commit: the point is asked once per command, at its first
// commit, and a failure stands for every later try at committing (the
// insert path tries a failed batch again document by document).
func (h *Handler) transactionalWriteCheck(r *request, session string, txn int64) func() error {
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() { err = h.failTransactionalWrite(r, session, txn) })
		return err
	}
}

// failTransactionalWrite consults onPrimaryTransactionalWrite as a
// statement of a retryable write is about to commit: the connection
// closes once the command is done (closeConnection, the default), and
// failBeforeCommitExceptionCode fails the write so that nothing of it
// commits.
func (h *Handler) failTransactionalWrite(r *request, session string, txn int64) error {
	if h.failPoints == nil {
		return nil
	}
	f, ok := h.failPoints.TransactionalWriteFailure()
	if !ok {
		return nil
	}
	if f.CloseConnection && r.conn != nil {
		r.conn.HangUp()
	}
	if f.HasFailCode {
		return f.Error(session, txn)
	}
	return nil
}

// failCall describes r to the fail point. A handshake's own client
// metadata counts, so that appName can fail the hello that carries it.
func (h *Handler) failCall(r *request) failpoint.Call {
	call := failpoint.Call{Names: append([]string{r.name}, commandAliases[r.name]...), Namespace: r.db}
	if coll, ok := r.body[0].Value.(string); ok {
		call.Namespace = r.db + "." + coll
	}
	if r.conn == nil {
		return call
	}
	if md, ok := r.conn.Value(clientMetadataKey).(clientMetadata); ok {
		call.AppName = md.appName
	} else {
		call.AppName = appNameOf(r.body)
	}
	return call
}

// appNameOf reads client.application.name from a hello.
func appNameOf(hello bson.D) string {
	v, _ := bsonutil.LookupPath(hello, "client.application.name")
	s, _ := v.(string)
	return s
}
