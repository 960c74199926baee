package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

type opcounts struct{ Insert, Query, Update, Delete, GetMore, Command int64 }

func readOpcounters(t *testing.T, c *mongo.Client) opcounts {
	t.Helper()
	var st struct {
		Opcounters opcounts `bson:"opcounters"`
	}
	if err := c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Opcounters
}

// quietClient connects with a heartbeat too rare to land inside a test,
// and waits until the driver's start-up hellos are over: then only the
// test's commands (and each serverStatus) move the counters.
func quietClient(t *testing.T, s *testServer) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(s.uri).SetHeartbeatInterval(time.Hour).SetTimeout(20 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(ctxT(t)) })
	prev := readOpcounters(t, c)
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		now := readOpcounters(t, c)
		if now.Command == prev.Command+1 {
			return c
		}
		prev = now
	}
	t.Fatal("the driver's commands did not settle within 5 s")
	return nil
}

// TestOpcountersCountAsMongod: insert counts documents inserted, update
// and delete the statements run, bulkWrite each operation so; find,
// getMore and every other command count one each.
func TestOpcountersCountAsMongod(t *testing.T) {
	c := quietClient(t, startServer(t, app.Config{}))
	db := c.Database("test")
	runCmd(t, db, bson.D{{Key: "insert", Value: "seed"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}}}}})
	docs := func(ids ...int) bson.A {
		out := bson.A{}
		for _, id := range ids {
			out = append(out, bson.D{{Key: "_id", Value: id}})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		db   string
		cmd  bson.D
		want opcounts
	}{
		{"insert counts documents", "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs(1, 2, 3)}}, opcounts{Insert: 3}},
		{"ordered insert stops at its error", "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs(4, 1, 5)}}, opcounts{Insert: 1}},
		{"unordered insert goes on", "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs(6, 1, 7)}, {Key: "ordered", Value: false}}, opcounts{Insert: 2}},
		{"update counts statements", "test", bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}}, {Key: "multi", Value: true}},
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 99}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 2}}}}}}}}}, opcounts{Update: 2}},
		{"delete counts statements", "test", bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 6}}}, {Key: "limit", Value: 1}},
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 7}}}, {Key: "limit", Value: 1}}}}}, opcounts{Delete: 2}},
		{"find counts a query", "test", bson.D{{Key: "find", Value: "seed"}, {Key: "batchSize", Value: 1}}, opcounts{Query: 1}},
		{"bulkWrite counts each operation", "admin", bson.D{{Key: "bulkWrite", Value: 1}, {Key: "ops", Value: bson.A{
			bson.D{{Key: "insert", Value: 0}, {Key: "document", Value: bson.D{{Key: "_id", Value: 20}}}},
			bson.D{{Key: "insert", Value: 0}, {Key: "document", Value: bson.D{{Key: "_id", Value: 21}}}},
			bson.D{{Key: "update", Value: 0}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 20}}}, {Key: "updateMods", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 1}}}}}},
			bson.D{{Key: "delete", Value: 0}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 21}}}}}},
			{Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "test.c"}}}}}, opcounts{Insert: 2, Update: 1, Delete: 1}},
		{"findAndModify is a command", "test", bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{}}, {Key: "remove", Value: true}}, opcounts{Command: 1}},
		{"aggregate is a command", "test", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}}, opcounts{Command: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := readOpcounters(t, c)
			_ = c.Database(tc.db).RunCommand(ctxT(t), tc.cmd).Err()
			after := readOpcounters(t, c)
			got := opcounts{Insert: after.Insert - before.Insert, Query: after.Query - before.Query, Update: after.Update - before.Update,
				Delete: after.Delete - before.Delete, GetMore: after.GetMore - before.GetMore, Command: after.Command - before.Command - 1}
			if got != tc.want {
				t.Fatalf("opcounters moved by %+v, want %+v", got, tc.want)
			}
		})
	}
	before := readOpcounters(t, c)
	var reply bson.D
	if err := db.RunCommand(ctxT(t), bson.D{{Key: "find", Value: "seed"}, {Key: "batchSize", Value: 1}}).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	id, _ := cursorReply(t, reply, "firstBatch")
	runCmd(t, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "seed"}})
	if after := readOpcounters(t, c); after.GetMore-before.GetMore != 1 || after.Query-before.Query != 1 {
		t.Fatalf("a find and a getMore: %+v → %+v", before, after)
	}
}
