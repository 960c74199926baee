package integration

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/txnrules"
)

// retryMoveCase is one kind of retryable write: the command that writes
// document id once, and what the collection must hold after the write
// and any number of its retries.
type retryMoveCase struct {
	name  string
	cmd   func(id int32) bson.D
	reply []string // the reply fields a retry must repeat
	after func(t *testing.T, doc bson.M, found bool)
}

// retryMoveCases are the router's retryable write commands, each on a
// document of its own.
var retryMoveCases = []retryMoveCase{
	{name: "insert", reply: []string{"n"},
		cmd: func(id int32) bson.D {
			return bson.D{{Key: "insert", Value: "retrymove"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}, {Key: "n", Value: 1}}}}}
		},
		after: wantCounter(1)},
	{name: "update", reply: []string{"n", "nModified"},
		cmd: func(id int32) bson.D {
			return bson.D{{Key: "update", Value: "retrymove"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: id}}},
				{Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}}}}}
		},
		after: wantCounter(2)},
	{name: "delete", reply: []string{"n"},
		cmd: func(id int32) bson.D {
			return bson.D{{Key: "delete", Value: "retrymove"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: id}}},
				{Key: "limit", Value: 1}}}}}
		},
		after: func(t *testing.T, doc bson.M, found bool) {
			if found {
				t.Fatalf("the deleted document is back: %v", doc)
			}
		}},
	{name: "findAndModify", reply: []string{"value"},
		cmd: func(id int32) bson.D {
			return bson.D{{Key: "findAndModify", Value: "retrymove"}, {Key: "query", Value: bson.D{{Key: "_id", Value: id}}},
				{Key: "update", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}, {Key: "new", Value: true}}
		},
		after: wantCounter(2)},
	{name: "upsert", reply: []string{"n", "nModified", "upserted"},
		cmd: func(id int32) bson.D {
			return bson.D{{Key: "update", Value: "retrymove"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: id}}},
				{Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}, {Key: "upsert", Value: true}}}}}
		},
		after: wantCounter(1)},
	{name: "bulkWrite", reply: []string{"nMatched", "nModified"},
		cmd: func(id int32) bson.D {
			return bson.D{{Key: "bulkWrite", Value: 1}, {Key: "ops", Value: bson.A{bson.D{{Key: "update", Value: 0},
				{Key: "filter", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "updateMods", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}}}},
				{Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "test.retrymove"}}}}, {Key: "$db", Value: "admin"}}
		},
		after: wantCounter(2)},
}

// TestRetryMoveCasesCoverRetryableWrites: every retryable write command
// has a case in the table the migration test retries.
func TestRetryMoveCasesCoverRetryableWrites(t *testing.T) {
	have := map[string]bool{}
	for _, tc := range retryMoveCases {
		have[tc.cmd(1)[0].Key] = true
	}
	for _, name := range txnrules.RetryableWrites() {
		if !have[name] {
			t.Errorf("retryable write %s has no case in retryMoveCases", name)
		}
	}
}

func wantCounter(n int32) func(t *testing.T, doc bson.M, found bool) {
	return func(t *testing.T, doc bson.M, found bool) {
		t.Helper()
		if !found || doc["n"] != n {
			t.Fatalf("document after the write and its retries: %v (found %v), want n %d", doc, found, n)
		}
	}
}

// testRetryHistoryMoves: a retryable write answered by the donor and
// retried through the router after its document's chunk moved answers
// the first attempt's reply on the recipient and writes nothing again,
// for every kind of retryable write.
func testRetryHistoryMoves(t *testing.T, c *routedCluster) {
	cl := c.client()
	coll := cl.Database("test").Collection("retrymove")
	runCmd(t, cl.Database("admin"), bson.D{{Key: "shardCollection", Value: "test.retrymove"},
		{Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}})
	firsts := make([]bson.D, len(retryMoveCases))
	for i, tc := range retryMoveCases {
		id := int32(100 + i)
		if tc.name != "insert" && tc.name != "upsert" { // the others change a stored document
			if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: id}, {Key: "n", Value: int32(1)}}); err != nil {
				t.Fatal(err)
			}
		}
		firsts[i] = rawCall(t, c.router, retryableOn(tc.cmd(id), i))
		if codeOf(firsts[i]) != 0 {
			t.Fatalf("%s: first attempt: %v", tc.name, firsts[i])
		}
	}
	for _, ch := range chunks(t, cl, "test.retrymove") { // every document moves, once
		runCmd(t, cl.Database("admin"), bson.D{{Key: "moveChunk", Value: "test.retrymove"},
			{Key: "bounds", Value: bson.A{ch.Min, ch.Max}}, {Key: "to", Value: otherShard(ch.Shard)}})
	}
	for i, tc := range retryMoveCases {
		t.Run(tc.name, func(t *testing.T) {
			id := int32(100 + i)
			again := rawCall(t, c.router, retryableOn(tc.cmd(id), i))
			for _, f := range tc.reply {
				if fmt.Sprint(lookupField(again, f)) != fmt.Sprint(lookupField(firsts[i], f)) {
					t.Fatalf("retry after the move: %s %v, first attempt %v (reply %v)", f, lookupField(again, f), lookupField(firsts[i], f), again)
				}
			}
			var doc bson.M
			err := coll.FindOne(ctxT(t), bson.D{{Key: "_id", Value: id}}).Decode(&doc)
			tc.after(t, doc, err == nil)
		})
	}
}

// retryableOn makes cmd a retryable write of a session of its own
// (number k), txnNumber 1, on database test unless it names one.
func retryableOn(cmd bson.D, k int) bson.D {
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte(fmt.Sprintf("retrymove-%06d", k))}}}
	cmd = append(cmd, bson.E{Key: "lsid", Value: lsid}, bson.E{Key: "txnNumber", Value: int64(1)})
	if lookupField(cmd, "$db") == nil {
		cmd = append(cmd, bson.E{Key: "$db", Value: "test"})
	}
	return cmd
}
