package commands

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
	"github.com/mayflydb/mayfly/internal/wire"
)

// BenchmarkSessionOps is one operation of the bench command's session
// workload (docs/design/0005) each, as the Go driver sends it: touch is
// updateOne({token}, {$set: {accessTime}}), verify findOne({token}),
// login insertOne, logout deleteOne({token}), on a collection with a TTL
// index on accessTime and an index on token. Every request goes the way a
// connection takes it, minus the socket: OP_MSG bytes parsed by the wire
// reader and decoded, the handler, the reply encoded by the wire writer.
// The requests are built before the timer starts, so ns/op and allocs/op
// are the server's alone.
func BenchmarkSessionOps(b *testing.B) {
	h, conn, cache := newResidentHandler(b)
	sb := &sessionBench{h: h, conn: conn, cache: cache, lsid: benchLsid()}
	sb.load(b, sessionOpsPreload)
	for _, op := range sessionOps {
		b.Run(op, func(b *testing.B) {
			msgs := sb.requests(b, op, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for _, m := range msgs {
				sb.serve(b, m)
			}
		})
	}
}

// sessionOpsPreload is the number of sessions every operation starts with.
const sessionOpsPreload = 20000

// sessionOps are the session workload's operations (internal/bench's
// opKind), each of which sessionBench.request builds.
var sessionOps = []string{"touch", "verify", "login", "logout"}

// sessionBench holds the handler and the state that the generated
// requests share: the session's lsid, its txnNumber, the sessions made.
type sessionBench struct {
	h       *Handler
	conn    *server.Conn
	cache   *rescache.Cache
	lsid    bson.D
	made    int // sessions inserted so far: tokens 0..made-1
	dropped int // sessions logged out: tokens 0..dropped-1 are gone
	rng     *rand.Rand
	src     bytes.Reader // the request being served
	in      *wire.Reader // on src, reused as a connection reuses its own
	out     *wire.Writer
}

// benchLsid is the logical session every request names, as the driver's
// implicit session does.
func benchLsid() bson.D {
	return bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}
}

func sessionToken(i int) string { return fmt.Sprintf("%032x", uint64(i)*0x9e3779b97f4a7c15) }

func sessionDoc(i int) bson.D {
	return bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "token", Value: sessionToken(i)},
		{Key: "userID", Value: int64(i)}, {Key: "accessTime", Value: bson.NewDateTimeFromTime(time.Now())}}
}

// load creates the indexes and inserts n sessions.
func (sb *sessionBench) load(b testing.TB, n int) {
	sb.rng = rand.New(rand.NewPCG(17, 5))
	sb.in = wire.NewReader(&sb.src, nil)
	sb.out = wire.NewWriter(io.Discard, nil)
	mustRun(b, sb.h, bson.D{{Key: "createIndexes", Value: "sessions"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "accessTime", Value: 1}}}, {Key: "name", Value: "ttl"}, {Key: "expireAfterSeconds", Value: 1800}},
		bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: 1}}}, {Key: "name", Value: "token_1"}},
	}}})
	sb.insertSessions(b, n)
	sb.warm(b)
}

// warm finds one session by token, whose range is cold, and waits for the
// warm-up of the token index that starts (pebblestore/warm.go): the
// operations are measured as the server runs once it is over, and not
// charged with its work.
func (sb *sessionBench) warm(tb testing.TB) {
	tb.Helper()
	mustRun(tb, sb.h, bson.D{{Key: "find", Value: "sessions"}, {Key: "filter", Value: bson.D{{Key: "token", Value: sessionToken(0)}}}})
	for deadline := time.Now().Add(30 * time.Second); sb.cache.Stats().WarmUps == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatal("no warm-up of the token index ended")
		}
	}
}

func (sb *sessionBench) insertSessions(b testing.TB, n int) {
	for n > 0 {
		docs := bson.A{}
		for range min(n, 1000) {
			docs = append(docs, sessionDoc(sb.made))
			sb.made++
		}
		n -= len(docs)
		mustRun(b, sb.h, bson.D{{Key: "insert", Value: "sessions"}, {Key: "documents", Value: docs}})
	}
}

func mustRun(tb testing.TB, h *Handler, body bson.D) {
	tb.Helper()
	if _, err := call0(h, body); err != nil {
		tb.Fatalf("%v: %v", body, err)
	}
}

// requests builds n OP_MSG requests of op. Logouts take sessions made for
// them here; touches and verifies pick live sessions at random.
func (sb *sessionBench) requests(b testing.TB, op string, n int) [][]byte {
	if op == "logout" {
		sb.insertSessions(b, n)
	}
	msgs := make([][]byte, n)
	for i := range msgs {
		body, seq := sb.request(op)
		raw, err := bson.Marshal(body)
		if err != nil {
			b.Fatal(err)
		}
		var seqs []wire.Sequence
		if seq.Identifier != "" {
			seqs = append(seqs, seq)
		}
		msgs[i] = wire.AppendMsg(nil, int32(i+1), 0, 0, raw, seqs...)
	}
	return msgs
}

// request is one operation's body and its document sequence, shaped as
// the Go driver sends them to a standalone server (no txnNumber: retryable
// writes need a replica set) from an operation whose context has a
// deadline, as the bench's have: the driver then sends maxTimeMS.
func (sb *sessionBench) request(op string) (bson.D, wire.Sequence) {
	live := func() string { return sessionToken(sb.dropped + sb.rng.IntN(sb.made-sb.dropped)) }
	write := func(name, seq string, doc bson.D) (bson.D, wire.Sequence) {
		raw, _ := bson.Marshal(doc)
		return bson.D{{Key: name, Value: "sessions"}, {Key: "ordered", Value: true}, {Key: "lsid", Value: sb.lsid},
				{Key: "maxTimeMS", Value: int64(benchMaxTimeMS)}, {Key: "$db", Value: "test"}},
			wire.Sequence{Identifier: seq, Docs: []bson.Raw{raw}}
	}
	switch op {
	case "touch":
		return write("update", "updates", bson.D{{Key: "q", Value: bson.D{{Key: "token", Value: live()}}},
			{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "accessTime", Value: bson.NewDateTimeFromTime(time.Now())}}}}}})
	case "login":
		sb.made++
		return write("insert", "documents", sessionDoc(sb.made-1))
	case "logout":
		sb.dropped++
		return write("delete", "deletes", bson.D{{Key: "q", Value: bson.D{{Key: "token", Value: sessionToken(sb.dropped - 1)}}}, {Key: "limit", Value: 1}})
	}
	return bson.D{{Key: "find", Value: "sessions"}, {Key: "filter", Value: bson.D{{Key: "token", Value: live()}}},
		{Key: "limit", Value: int64(1)}, {Key: "singleBatch", Value: true}, {Key: "lsid", Value: sb.lsid},
		{Key: "maxTimeMS", Value: int64(benchMaxTimeMS)}, {Key: "$db", Value: "test"}}, wire.Sequence{}
}

// benchMaxTimeMS is the time left of a bench operation's context, as the
// driver puts it in maxTimeMS.
const benchMaxTimeMS = 59_000

// serve takes one request the way a connection does: parse, decode,
// handle, encode the reply. A reply that is not ok fails the benchmark.
func (sb *sessionBench) serve(b *testing.B, msg []byte) {
	sb.src.Reset(msg)
	m, err := sb.in.ReadMessage()
	if err != nil {
		b.Fatal(err)
	}
	body, err := m.Command()
	if err != nil {
		b.Fatal(err)
	}
	reply := sb.h.Handle(context.Background(), sb.conn, &server.Command{DB: "test", Name: body[0].Key, Body: body, Size: len(msg)})
	if ok, _ := bsonutil.Field(reply, "ok"); ok != 1.0 {
		b.Fatalf("%s: %v", body[0].Key, reply)
	}
	if cur, ok := bsonutil.Field(reply, "cursor"); ok && len(firstBatchOf(reply)) != 1 {
		b.Fatalf("find found no session: %v", cur)
	}
	if n, _ := bsonutil.Field(reply, "n"); n == int32(0) {
		b.Fatalf("%s matched nothing: %v", body[0].Key, reply)
	}
	if err := sb.out.WriteMsg(m.Header.RequestID, reply); err != nil {
		b.Fatal(err)
	}
}
