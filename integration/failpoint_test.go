package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/txnrules"
)

func testCommandsServer(t *testing.T) *testServer {
	return startServer(t, app.Config{SetParameters: map[string]string{"enableTestCommands": "1"}})
}

// connectApp connects without driver retries (a retry would hide the
// failure under test), under an appName.
func connectApp(t *testing.T, s *testServer, appName string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(s.uri).SetAppName(appName).
		SetRetryReads(false).SetRetryWrites(false).SetTimeout(20 * time.Second))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Disconnect(ctxT(t)) })
	return c
}

func failCommand(t *testing.T, c *mongo.Client, mode any, data bson.D) bson.D {
	t.Helper()
	return runCmd(t, c.Database("admin"), bson.D{
		{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: mode}, {Key: "data", Value: data}})
}

// rawError returns the whole reply of a command the driver reported as
// failed: a command error or a write exception.
func rawError(t *testing.T, err error) bson.D {
	t.Helper()
	var raw bson.Raw
	var ce mongo.CommandError
	var we mongo.WriteException
	switch {
	case errorAs(err, &ce):
		raw = ce.Raw
	case errorAs(err, &we):
		raw = we.Raw
	default:
		t.Fatalf("want a command error or write exception, got %v", err)
	}
	var d bson.D
	if err := bson.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestConfigureFailPointNeedsTestCommands: without enableTestCommands the
// command does not exist, as on mongod.
func TestConfigureFailPointNeedsTestCommands(t *testing.T) {
	db := newDB(t).Client().Database("admin")
	err := db.RunCommand(ctxT(t), bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "off"}}).Err()
	wantCode(t, err, 59, "no such command: 'configureFailPoint'")
}

func TestConfigureFailPointAnswers(t *testing.T) {
	c := connectApp(t, testCommandsServer(t), "answers")
	admin := c.Database("admin")
	err := admin.RunCommand(ctxT(t), bson.D{{Key: "configureFailPoint", Value: "noSuchPoint"}, {Key: "mode", Value: "off"}}).Err()
	wantCode(t, err, 266, "noSuchPoint not found")
	err = c.Database("test").RunCommand(ctxT(t), bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "off"}}).Err()
	wantCode(t, err, 13, "configureFailPoint may only be run against the admin database.")

	failCommand(t, c, bson.D{{Key: "times", Value: 2}}, bson.D{
		{Key: "failCommands", Value: bson.A{"insert"}}, {Key: "errorCode", Value: 91}})
	coll := c.Database("test").Collection("c")
	for i := range 2 {
		// A find between does not consume the insert's times.
		if err := coll.FindOne(ctxT(t), bson.D{}).Err(); err != nil && err != mongo.ErrNoDocuments {
			t.Fatalf("find: %v", err)
		}
		_, err := coll.InsertOne(ctxT(t), bson.D{{Key: "i", Value: i}})
		reply := rawError(t, err)
		wantFields(t, reply, bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "Failing command via 'failCommand' failpoint"},
			{Key: "code", Value: int32(91)}, {Key: "codeName", Value: "ShutdownInProgress"}})
	}
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "i", Value: 2}}); err != nil {
		t.Fatalf("third insert: %v", err)
	}
	off := failCommand(t, c, "off", bson.D{})
	if got := field(t, off, "count"); got != int32(2) {
		t.Fatalf("count %v, want 2 entries", got)
	}
}

// TestFailCommandLabelsAndAppName: errorLabels ride in the reply; appName
// limits the failure to one client.
func TestFailCommandLabelsAndAppName(t *testing.T) {
	s := testCommandsServer(t)
	target, other := connectApp(t, s, "target"), connectApp(t, s, "other")
	failCommand(t, target, "alwaysOn", bson.D{{Key: "failCommands", Value: bson.A{"find"}},
		{Key: "errorCode", Value: 8}, {Key: "errorLabels", Value: bson.A{"Custom"}}, {Key: "appName", Value: "target"}})
	t.Cleanup(func() { failCommand(t, target, "off", bson.D{}) })
	err := target.Database("test").RunCommand(ctxT(t), bson.D{{Key: "find", Value: "c"}}).Err()
	reply := rawError(t, err)
	wantFields(t, reply, bson.D{{Key: "code", Value: int32(8)}, {Key: "codeName", Value: "UnknownError"},
		{Key: "errorLabels", Value: bson.A{"Custom"}}})
	if err := other.Database("test").RunCommand(ctxT(t), bson.D{{Key: "find", Value: "c"}}).Err(); err != nil {
		t.Fatalf("another application's find failed: %v", err)
	}
}

// TestFailCommandConnection: closeConnection drops the connection without
// a reply; blockConnection holds the command for blockTimeMS.
func TestFailCommandConnection(t *testing.T) {
	c := connectApp(t, testCommandsServer(t), "conn")
	db := c.Database("test")
	failCommand(t, c, bson.D{{Key: "times", Value: 1}}, bson.D{{Key: "failCommands", Value: bson.A{"ping"}}, {Key: "closeConnection", Value: true}})
	err := db.RunCommand(ctxT(t), bson.D{{Key: "ping", Value: 1}}).Err()
	if !mongo.IsNetworkError(err) {
		t.Fatalf("ping over a closed connection: %v, want a network error", err)
	}
	runCmd(t, db, bson.D{{Key: "ping", Value: 1}})

	const block = 300 * time.Millisecond
	failCommand(t, c, bson.D{{Key: "times", Value: 1}}, bson.D{{Key: "failCommands", Value: bson.A{"ping"}},
		{Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: block.Milliseconds()}})
	begun := time.Now()
	runCmd(t, db, bson.D{{Key: "ping", Value: 1}})
	if took := time.Since(begun); took < block {
		t.Fatalf("blocked ping took %v, want at least %v", took, block)
	}
}

// TestFailCommandWriteConcernError: the command succeeds and its reply
// carries the fail point's writeConcernError.
func TestFailCommandWriteConcernError(t *testing.T) {
	c := connectApp(t, testCommandsServer(t), "wce")
	wce := bson.D{{Key: "code", Value: int32(91)}, {Key: "codeName", Value: "ShutdownInProgress"}, {Key: "errmsg", Value: "Replication is being shut down"}}
	failCommand(t, c, bson.D{{Key: "times", Value: 1}}, bson.D{{Key: "failCommands", Value: bson.A{"insert"}}, {Key: "writeConcernError", Value: wce}})
	var reply bson.D
	err := c.Database("test").RunCommand(ctxT(t), bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}}).Decode(&reply)
	if err != nil {
		reply = rawError(t, err)
	}
	wantFields(t, reply, bson.D{{Key: "n", Value: int32(1)}, {Key: "writeConcernError", Value: wce}, {Key: "ok", Value: 1.0}})
}

// wantFields checks that reply has each of want's fields with its value.
func wantFields(t *testing.T, reply, want bson.D) {
	t.Helper()
	for _, w := range want {
		got := lookupField(reply, w.Key)
		if !sameValue(got, w.Value) {
			t.Fatalf("%s = %v, want %v in %v", w.Key, got, w.Value, reply)
		}
	}
}

func sameValue(a, b any) bool {
	ra, errA := bson.Marshal(bson.D{{Key: "v", Value: a}})
	rb, errB := bson.Marshal(bson.D{{Key: "v", Value: b}})
	return errA == nil && errB == nil && string(ra) == string(rb)
}

// TestFailCommandOnEveryWrite: each command that writes documents, failed
// by the fail point, answers with the whole error (code, codeName,
// errmsg, errorLabels), and given a writeConcernError succeeds with it;
// drivers' errorResponse assertions read these fields.
func TestFailCommandOnEveryWrite(t *testing.T) {
	c := connectApp(t, testCommandsServer(t), "writes")
	writes := map[string]struct {
		db  string
		cmd bson.D
	}{
		"insert": {"test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "a", Value: 1}}}}}},
		"update": {"test", bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
			{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}}}}}}},
		"delete": {"test", bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "none", Value: 1}}}, {Key: "limit", Value: 0}}}}}},
		"findAndModify": {"test", bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{}},
			{Key: "update", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 2}}}}}}},
		"bulkWrite": {"admin", bson.D{{Key: "bulkWrite", Value: 1},
			{Key: "ops", Value: bson.A{bson.D{{Key: "insert", Value: 0}, {Key: "document", Value: bson.D{{Key: "a", Value: 2}}}}}},
			{Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "test.c"}}}}}},
		"aggregate": {"test", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{
			bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "d"}}}}}}, {Key: "cursor", Value: bson.D{}}}},
	}
	for _, name := range txnrules.RetryableWrites() {
		if _, ok := writes[name]; !ok {
			t.Errorf("write command %s has no row", name)
		}
	}
	wce := bson.D{{Key: "code", Value: int32(100)}, {Key: "codeName", Value: "UnsatisfiableWriteConcern"}, {Key: "errmsg", Value: "Not enough data-bearing nodes"}, {Key: "errInfo", Value: bson.D{{Key: "writeConcern", Value: bson.D{{Key: "w", Value: int32(2)}}}}}}
	for name, w := range writes {
		t.Run(name, func(t *testing.T) {
			db := c.Database(w.db)
			failCommand(t, c, bson.D{{Key: "times", Value: 1}}, bson.D{{Key: "failCommands", Value: bson.A{name}},
				{Key: "errorCode", Value: 8}, {Key: "errorLabels", Value: bson.A{"Label"}}})
			wantFields(t, anyReply(t, db, w.cmd), bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "Failing command via 'failCommand' failpoint"},
				{Key: "code", Value: int32(8)}, {Key: "codeName", Value: "UnknownError"}, {Key: "errorLabels", Value: bson.A{"Label"}}})
			failCommand(t, c, bson.D{{Key: "times", Value: 1}}, bson.D{{Key: "failCommands", Value: bson.A{name}}, {Key: "writeConcernError", Value: wce}})
			wantFields(t, anyReply(t, db, w.cmd), bson.D{{Key: "writeConcernError", Value: wce}, {Key: "ok", Value: 1.0}})
		})
	}
}

// TestFailCommandRetryableWriteLabels: on a replica set, a retryable
// write failed by the fail point with a retryable code, or given a
// retryable writeConcernError, carries RetryableWriteError as mongod's
// replies do, so the driver retries it; labels set in the fail point
// replace the server's.
func TestFailCommandRetryableWriteLabels(t *testing.T) {
	rs := startReplSet(t, 1, "--setParameter", "enableTestCommands=1")
	c := rs.client(options.Client().SetRetryWrites(true))
	db := c.Database("test")
	// ExceededTimeLimit is retryable without being a state change error,
	// which would make the driver rediscover the server first.
	const retryable = 262
	failCommand(t, c, bson.D{{Key: "times", Value: 1}}, bson.D{{Key: "failCommands", Value: bson.A{"insert"}}, {Key: "errorCode", Value: retryable}})
	if _, err := db.Collection("retry").InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("one retryable error: the driver's retry must succeed: %v", err)
	}
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctxT(t))
	ctx := mongo.NewSessionContext(ctxT(t), sess)
	for i, tc := range []struct {
		name   string
		data   bson.D
		labels bson.A
	}{
		{"retryable code", bson.D{{Key: "errorCode", Value: retryable}}, bson.A{"RetryableWriteError"}},
		{"retryable writeConcernError", bson.D{{Key: "writeConcernError", Value: bson.D{{Key: "code", Value: int32(retryable)}, {Key: "errmsg", Value: "operation exceeded time limit"}}}}, bson.A{"RetryableWriteError"}},
		{"fail point's labels", bson.D{{Key: "errorCode", Value: retryable}, {Key: "errorLabels", Value: bson.A{}}}, bson.A{}},
		{"code not retryable", bson.D{{Key: "errorCode", Value: 8}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failCommand(t, c, bson.D{{Key: "times", Value: 1}}, append(bson.D{{Key: "failCommands", Value: bson.A{"insert"}}}, tc.data...))
			cmd := bson.D{{Key: "insert", Value: "retry"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 10 + i}}}}, {Key: "txnNumber", Value: int64(100 + i)}}
			var reply bson.D
			if err := db.RunCommand(ctx, cmd).Decode(&reply); err != nil {
				reply = rawError(t, err)
			}
			if got := lookupField(reply, "errorLabels"); !sameValue(got, tc.labels) && !(tc.labels == nil && got == nil) {
				t.Fatalf("errorLabels %v, want %v in %v", got, tc.labels, reply)
			}
		})
	}
}

// TestFailGetMoreAfterCursorCheckout: the point fails the next getMore of
// any cursor with its errorCode (InternalError without one) and mongod's
// message, and kills the cursor; a change stream's resumable error is
// labelled ResumableChangeStreamError, as any error of the stream; appName
// limits it to one client.
func TestFailGetMoreAfterCursorCheckout(t *testing.T) {
	c := connectApp(t, testCommandsServer(t), "getmore")
	db := c.Database("test")
	runCmd(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}}})
	find := bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}}
	stream := bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$changeStream", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}}
	cases := []struct {
		name   string
		open   bson.D
		data   bson.D
		code   int32
		labels bson.A
	}{
		{"find, given code", find, bson.D{{Key: "errorCode", Value: 6}}, 6, nil},
		{"find, no code", find, bson.D{}, 1, nil},
		{"stream, resumable", stream, bson.D{{Key: "errorCode", Value: 6}}, 6, bson.A{"ResumableChangeStreamError"}},
		{"stream, not resumable", stream, bson.D{{Key: "errorCode", Value: 2}}, 2, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := cursorID(t, runCmd(t, db, tc.open))
			configureGetMoreFailure(t, c, tc.data)
			reply := anyReply(t, db, getMoreCmd(id))
			want := bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "Hit the 'failGetMoreAfterCursorCheckout' failpoint"}, {Key: "code", Value: tc.code}}
			if tc.labels != nil {
				want = append(want, bson.E{Key: "errorLabels", Value: tc.labels})
			} else if lookupField(reply, "errorLabels") != nil {
				t.Fatalf("labels where mongod gives none: %v", reply)
			}
			wantFields(t, reply, want)
			err := db.RunCommand(ctxT(t), getMoreCmd(id)).Err()
			wantCode(t, err, 43, "not found")
		})
	}
	t.Run("other application", func(t *testing.T) {
		id := cursorID(t, runCmd(t, db, find))
		configureGetMoreFailure(t, c, bson.D{{Key: "errorCode", Value: 6}, {Key: "appName", Value: "another"}})
		runCmd(t, db, getMoreCmd(id))
	})
}

func configureGetMoreFailure(t *testing.T, c *mongo.Client, data bson.D) {
	t.Helper()
	runCmd(t, c.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "failGetMoreAfterCursorCheckout"},
		{Key: "mode", Value: bson.D{{Key: "times", Value: 1}}}, {Key: "data", Value: data}})
}

func getMoreCmd(id int64) bson.D {
	return bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "maxTimeMS", Value: 100}}
}

func cursorID(t *testing.T, reply bson.D) int64 {
	t.Helper()
	cur, _ := lookupField(reply, "cursor").(bson.D)
	id, _ := lookupField(cur, "id").(int64)
	if id == 0 {
		t.Fatalf("no open cursor in %v", reply)
	}
	return id
}

// TestOnPrimaryTransactionalWrite: the point meets a retryable write as it
// commits. By default the write commits and the connection closes unread,
// so the driver's retry is answered from the write's record (one
// document); failBeforeCommitExceptionCode fails it uncommitted (the
// retry writes it once); failing the try and its retry leaves nothing; with
// closeConnection false the client reads the error.
func TestOnPrimaryTransactionalWrite(t *testing.T) {
	rs := startReplSet(t, 1, "--setParameter", "enableTestCommands=1")
	c := rs.client(options.Client().SetRetryWrites(true))
	coll := c.Database("test").Collection("txnwrite")
	failBefore := bson.D{{Key: "failBeforeCommitExceptionCode", Value: 1}}
	cases := []struct {
		name   string
		times  int
		data   bson.D
		stored int64 // documents with the _id afterwards
		fails  bool
	}{
		{"committed, reply lost", 1, bson.D{}, 1, false},
		{"not committed, retried", 1, failBefore, 1, false},
		{"never committed", 2, failBefore, 0, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			configureTxnWriteFailure(t, c, tc.times, tc.data)
			// No deadline: under one the driver retries until it passes,
			// not once.
			_, err := coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: i}})
			configureTxnWriteFailure(t, c, 0, bson.D{})
			if (err != nil) != tc.fails {
				t.Fatalf("insert: %v, want failure %v", err, tc.fails)
			}
			if n, err := coll.CountDocuments(ctxT(t), bson.D{{Key: "_id", Value: i}}); err != nil || n != tc.stored {
				t.Fatalf("%d documents stored (%v), want %d", n, err, tc.stored)
			}
		})
	}
	t.Run("error read", func(t *testing.T) {
		configureTxnWriteFailure(t, c, 1, bson.D{{Key: "failBeforeCommitExceptionCode", Value: 91}, {Key: "closeConnection", Value: false}})
		noRetry := rs.client(options.Client().SetRetryWrites(false))
		sess, err := noRetry.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.EndSession(ctxT(t))
		db := noRetry.Database("test")
		cmd := bson.D{{Key: "insert", Value: "txnwrite"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 99}}}}, {Key: "txnNumber", Value: int64(1)}}
		err = db.RunCommand(mongo.NewSessionContext(ctxT(t), sess), cmd).Err()
		wantCode(t, err, 91, "due to failpoint. The write must not be reflected.")
		if n, _ := coll.CountDocuments(ctxT(t), bson.D{{Key: "_id", Value: 99}}); n != 0 {
			t.Fatalf("the failed write committed")
		}
	})
}

// configureTxnWriteFailure sets onPrimaryTransactionalWrite for times
// writes (0: off).
func configureTxnWriteFailure(t *testing.T, c *mongo.Client, times int, data bson.D) {
	t.Helper()
	var mode any = bson.D{{Key: "times", Value: times}}
	if times == 0 {
		mode = "off"
	}
	runCmd(t, c.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "onPrimaryTransactionalWrite"},
		{Key: "mode", Value: mode}, {Key: "data", Value: data}})
}

// TestEveryFailPointConfigurable: every point of the registry answers
// configureFailPoint, as mongod's registered points do.
func TestEveryFailPointConfigurable(t *testing.T) {
	admin := connectApp(t, testCommandsServer(t), "points").Database("admin")
	for _, name := range failpoint.Names() {
		reply := runCmd(t, admin, bson.D{{Key: "configureFailPoint", Value: name}, {Key: "mode", Value: "off"}})
		if got := field(t, reply, "count"); got != int32(0) {
			t.Errorf("%s: count %v, want 0", name, got)
		}
	}
}
