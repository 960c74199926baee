package router

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// BenchmarkRoutedSessionOps is the session workload's operations, each
// targeted by the shard key, as the Go driver sends them to a router:
// a find of one document, an updateOne $set in a retryable write, and an
// insert. Each runs through the router's Handle and over loopback to a
// shard that answers as a shard does (its reply carries operationTime and
// $clusterTime), so the figure is the router's work per routed
// operation plus one shard round trip; allocs/op is the router's and the
// fake shard's together.
func BenchmarkRoutedSessionOps(b *testing.B) {
	fc := startFakeCluster(b)
	shard := fc.sets[1]
	shard.mu.Lock()
	shard.answer = sessionShardAnswer
	shard.mu.Unlock()
	ctx := context.Background()
	for _, op := range routedSessionOps() {
		b.Run(op.name, func(b *testing.B) {
			cmd := &server.Command{DB: "db", Name: op.body[0].Key, Body: op.body}
			if reply := fc.router.Handle(ctx, nil, cmd); wireclient.ReplyCode(reply) != 0 {
				b.Fatalf("%s: %v", op.name, reply)
			}
			b.ReportAllocs()
			for b.Loop() {
				fc.router.Handle(ctx, nil, cmd)
			}
		})
	}
}

type routedOp struct {
	name string
	body bson.D
}

// routedSessionOps are the workload's commands with a session's lsid,
// a retryable write's txnNumber and the gossiped $clusterTime.
func routedSessionOps() []routedOp {
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}
	clusterTime := bson.D{{Key: "clusterTime", Value: bson.Timestamp{T: 1_700_000_000, I: 1}},
		{Key: "signature", Value: bson.D{{Key: "hash", Value: bson.Binary{Data: make([]byte, 20)}}, {Key: "keyId", Value: int64(0)}}}}
	at := bson.NewDateTimeFromTime(time.Unix(1_700_000_000, 0))
	session := func(body bson.D, txn bool) bson.D {
		if txn {
			body = append(body, bson.E{Key: "txnNumber", Value: int64(7)})
		}
		return append(body, bson.E{Key: "lsid", Value: lsid}, bson.E{Key: "$clusterTime", Value: clusterTime},
			bson.E{Key: "$db", Value: "db"})
	}
	token := "0123456789abcdef0123456789abcdef"
	return []routedOp{
		{"find", session(bson.D{{Key: "find", Value: "sharded"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: token}}},
			{Key: "limit", Value: int64(1)}, {Key: "singleBatch", Value: true}}, false)},
		{"update", session(bson.D{{Key: "update", Value: "sharded"}, {Key: "ordered", Value: true},
			{Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: token}}},
				{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "accessTime", Value: at}}}}}}}}}, true)},
		{"insert", session(bson.D{{Key: "insert", Value: "sharded"}, {Key: "ordered", Value: true},
			{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: token}, {Key: "userID", Value: int64(42)},
				{Key: "accessTime", Value: at}}}}}, true)},
	}
}

// sessionShardAnswer answers as a shard: one document for a find, one
// match for an update, one insert, with the times a shard gossips.
func sessionShardAnswer(cmd *server.Command) bson.D {
	var reply bson.D
	switch cmd.Name {
	case "find":
		filter, _ := bsonutil.Field(cmd.Body, "filter")
		doc := append(bsonutil.ToD(filter), bson.E{Key: "userID", Value: int64(42)},
			bson.E{Key: "accessTime", Value: bson.NewDateTimeFromTime(time.Unix(1_700_000_000, 0))})
		reply = cursorReply(cmd.DB+".sharded", 0, "firstBatch", bson.A{doc})
	case "update":
		reply = bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}}
	default:
		reply = bson.D{{Key: "n", Value: int32(1)}}
	}
	now := bson.Timestamp{T: 1_700_000_000, I: 2}
	return append(reply, bson.E{Key: "ok", Value: 1.0}, bson.E{Key: "operationTime", Value: now},
		bson.E{Key: "$clusterTime", Value: bson.D{{Key: "clusterTime", Value: now},
			{Key: "signature", Value: bson.D{{Key: "hash", Value: bson.Binary{Data: make([]byte, 20)}}, {Key: "keyId", Value: int64(0)}}}}})
}
