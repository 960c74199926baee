package writeops

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/docstore/docstoretest"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// TestShardKeyUpdateRules: under a shard's guard (shard key k, this shard
// owning k < 100), each way an update can treat the key, with mongod's
// answer; the refused updates leave the document as it was.
func TestShardKeyUpdateRules(t *testing.T) {
	rows := []struct {
		name       string
		set        int32 // the new k; 5 keeps it
		multi      bool
		retryable  bool
		wantCode   mongoerr.Code
		wantStored int32
	}{
		{"key kept", 5, false, false, 0, 5},
		{"key changed, not retryable", 6, false, false, mongoerr.IllegalOperation, 5},
		{"key changed in a multi-update", 6, true, true, mongoerr.InvalidOptions, 5},
		{"key changed within this shard", 6, false, true, 0, 6},
		{"key moved to another shard", 500, false, true, mongoerr.WouldChangeOwningShard, 5},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			store := docstoretest.Open(t)
			c, _, err := store.GetOrCreate("db", "c")
			if err != nil {
				t.Fatal(err)
			}
			if err := InsertOne(c, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: int32(5)}}, docstore.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			op := guardedOp(row.retryable)
			mod, err := ParseModifier(bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: row.set}}}}, nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			f, err := query.NewFilter(bson.D{{Key: "_id", Value: 1}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = op.Update(store, "db", "c", &Update{Filter: f, Mod: mod, Multi: row.multi}, docstore.WriteOptions{}, nil)
			if got := codeOf(err); got != row.wantCode {
				t.Fatalf("update: %v, want code %d", err, row.wantCode)
			}
			if row.wantCode == mongoerr.WouldChangeOwningShard {
				checkImages(t, err)
			}
			doc, err := c.FindOne(bson.D{{Key: "_id", Value: 1}})
			if err != nil || bsonutil.ToD(doc)[1].Value != row.wantStored {
				t.Fatalf("stored %v (%v), want k %d", doc, err, row.wantStored)
			}
		})
	}
}

func guardedOp(retryable bool) Op {
	owns := func(doc bson.D) bool {
		k, _ := bsonutil.Field(doc, "k")
		n, _ := k.(int32)
		return n < 100
	}
	changed := func(before, after bson.D) bool {
		a, _ := bsonutil.Field(before, "k")
		b, _ := bsonutil.Field(after, "k")
		return bsonutil.Compare(a, b) != 0
	}
	ctx := WithShardKeyGuard(context.Background(), ShardKeyGuard{Changed: changed, Owns: owns, Retryable: retryable})
	return Op{Ctx: ctx, CheckCtx: func(context.Context) error { return nil }, Now: time.Now}
}

func codeOf(err error) mongoerr.Code {
	if err == nil {
		return 0
	}
	if e := mongoerr.As(err); e != nil {
		return e.Code
	}
	return -1
}

// checkImages: a WouldChangeOwningShard carries both images, as mongod's.
func checkImages(t *testing.T, err error) {
	t.Helper()
	extra := mongoerr.As(err).Extra
	if len(extra) != 3 || extra[0].Key != "preImage" || extra[1].Key != "postImage" || extra[2].Value != false {
		t.Fatalf("WouldChangeOwningShard extra fields %v", extra)
	}
	if k, _ := bsonutil.Field(extra[1].Value.(bson.D), "k"); k != int32(500) {
		t.Fatalf("postImage %v", extra[1].Value)
	}
}
