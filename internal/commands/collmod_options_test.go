package commands

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func collModIndexCmd(coll string, index bson.D) bson.D {
	return bson.D{{Key: "collMod", Value: coll}, {Key: "index", Value: index}}
}

func wantCollModCode(t *testing.T, h *Handler, coll string, index bson.D, code mongoerr.Code) {
	t.Helper()
	_, err := call(t, h, "test", collModIndexCmd(coll, index))
	if me := mongoerr.As(err); err == nil || me.Code != code {
		t.Fatalf("collMod %v: %v, want code %d", index, err, code)
	}
}

func foundIDs(t *testing.T, h *Handler, coll string) []any {
	t.Helper()
	var ids []any
	for _, d := range firstBatch(t, mustCall(t, h, "test", bson.D{{Key: "find", Value: coll}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}})) {
		id, _ := bsonutil.Field(asDoc(t, d), "_id")
		ids = append(ids, id)
	}
	return ids
}

func indexSpecNamed(t *testing.T, h *Handler, coll, name string) bson.D {
	t.Helper()
	for _, d := range firstBatch(t, mustCall(t, h, "test", bson.D{{Key: "listIndexes", Value: coll}})) {
		spec := asDoc(t, d)
		if n, _ := bsonutil.Field(spec, "name"); n == name {
			return spec
		}
	}
	t.Fatalf("no index %s", name)
	return nil
}

func TestCollModLRULimitEvictsAtOnce(t *testing.T) {
	h, _ := newClockedHandler(t, clock.NewManual(clusteredT0))
	mustCall(t, h, "test", bson.D{{Key: "createIndexes", Value: "cache"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "usedAt", Value: 1}}}, {Key: "name", Value: "lru"}, {Key: "lruLimit", Value: bson.D{{Key: "documents", Value: 10}}}}}}})
	docs := bson.A{}
	for i := 0; i < 10; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "usedAt", Value: bson.NewDateTimeFromTime(clusteredT0.Add(time.Duration(i) * time.Minute))}})
	}
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "cache"}, {Key: "documents", Value: docs}})

	four := bson.D{{Key: "documents", Value: int32(4)}}
	reply := mustCall(t, h, "test", collModIndexCmd("cache", bson.D{{Key: "name", Value: "lru"}, {Key: "lruLimit", Value: four}}))
	want := bson.D{{Key: "lruLimit_old", Value: bson.D{{Key: "documents", Value: int32(10)}}}, {Key: "lruLimit_new", Value: four}}
	if bsonutil.Format(reply) != bsonutil.Format(want) {
		t.Fatalf("reply %s, want %s", bsonutil.Format(reply), bsonutil.Format(want))
	}
	if ids := foundIDs(t, h, "cache"); len(ids) != 4 || ids[0] != int32(6) {
		t.Fatalf("after lowering the limit to 4: %v, want 6..9 (the latest)", ids)
	}
	if c := h.deps.Store.Collection("test", "cache"); c.Count() != 4 {
		t.Fatalf("%d stored: the lowered limit must hold before the reply", c.Count())
	}
	if got, _ := bsonutil.Field(indexSpecNamed(t, h, "cache", "lru"), "lruLimit"); bsonutil.Format(got) != bsonutil.Format(four) {
		t.Fatalf("listIndexes lruLimit %v", got)
	}
	if reply := mustCall(t, h, "test", collModIndexCmd("cache", bson.D{{Key: "name", Value: "lru"}, {Key: "lruLimit", Value: four}})); len(reply) != 0 {
		t.Fatalf("unchanged limit: reply %v, want nothing", reply)
	}
	reply = mustCall(t, h, "test", collModIndexCmd("cache", bson.D{{Key: "keyPattern", Value: bson.D{{Key: "usedAt", Value: 1}}}, {Key: "lruLimit", Value: "off"}}))
	if bsonutil.Format(reply) != bsonutil.Format(bson.D{{Key: "lruLimit_old", Value: four}}) {
		t.Fatalf("off: reply %s", bsonutil.Format(reply))
	}
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "cache"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: int32(20)}}, bson.D{{Key: "_id", Value: int32(21)}}}}})
	if ids := foundIDs(t, h, "cache"); len(ids) != 6 {
		t.Fatalf("without a limit nothing is evicted: %v", ids)
	}
	if _, ok := bsonutil.Field(indexSpecNamed(t, h, "cache", "lru"), "lruLimit"); ok {
		t.Fatal("listIndexes still shows lruLimit after off")
	}
	// A limit on an index that had none: only lruLimit_new, and it holds
	// at once (documents without the field are lowest and go first).
	reply = mustCall(t, h, "test", collModIndexCmd("cache", bson.D{{Key: "name", Value: "lru"}, {Key: "lruLimit", Value: bson.D{{Key: "documents", Value: 3}}}}))
	if len(reply) != 1 || reply[0].Key != "lruLimit_new" {
		t.Fatalf("new limit: reply %v", reply)
	}
	if ids := foundIDs(t, h, "cache"); len(ids) != 3 || ids[0] != int32(7) {
		t.Fatalf("after a limit of 3: %v, want 7 8 9", ids)
	}
	wantCollModCode(t, h, "cache", bson.D{{Key: "name", Value: "lru"}, {Key: "lruLimit", Value: bson.D{{Key: "documents", Value: 0}}}}, mongoerr.InvalidOptions)
	wantCollModCode(t, h, "cache", bson.D{{Key: "name", Value: "lru"}, {Key: "lruLimit", Value: bson.D{{Key: "rows", Value: 5}}}}, mongoerr.InvalidOptions)
	wantCollModCode(t, h, "cache", bson.D{{Key: "name", Value: "lru"}, {Key: "lruLimit", Value: "on"}}, mongoerr.InvalidOptions)
	wantCollModCode(t, h, "cache", bson.D{{Key: "name", Value: "lru"}, {Key: "lruLimit", Value: 5}}, mongoerr.TypeMismatch)
	wantCollModCode(t, h, "cache", bson.D{{Key: "name", Value: "_id_"}, {Key: "lruLimit", Value: bson.D{{Key: "documents", Value: 5}}}}, mongoerr.InvalidOptions)
	if ids := foundIDs(t, h, "cache"); len(ids) != 3 {
		t.Fatalf("refused collMods changed the collection: %v", ids)
	}
}

func TestCollModExpireElements(t *testing.T) {
	h, _ := newClockedHandler(t, clock.NewManual(clusteredT0))
	mustCall(t, h, "test", bson.D{{Key: "createIndexes", Value: "carts"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "items.addedAt", Value: 1}}}, {Key: "name", Value: "lines"}, {Key: "expireAfterSeconds", Value: 60}},
		bson.D{{Key: "key", Value: bson.D{{Key: "seen", Value: 1}}}, {Key: "name", Value: "seen"}, {Key: "expireAfterSeconds", Value: 60}, {Key: "refreshOnRead", Value: true}},
		bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "at"}, {Key: "expireAfterSeconds", Value: 60}},
		bson.D{{Key: "key", Value: bson.D{{Key: "plain.x", Value: 1}}}, {Key: "name", Value: "plain"}},
	}}})
	item := func(sku string, ago time.Duration) bson.D {
		return bson.D{{Key: "sku", Value: sku}, {Key: "addedAt", Value: bson.NewDateTimeFromTime(clusteredT0.Add(-ago))}}
	}
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "carts"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: "c1"}, {Key: "items", Value: bson.A{item("stale", time.Hour), item("fresh", 0)}}}}}})
	if ids := foundIDs(t, h, "carts"); len(ids) != 0 {
		t.Fatalf("a whole-document TTL on the lines expires the cart: %v", ids)
	}
	reply := mustCall(t, h, "test", collModIndexCmd("carts", bson.D{{Key: "name", Value: "lines"}, {Key: "expireElements", Value: true}}))
	if bsonutil.Format(reply) != bsonutil.Format(bson.D{{Key: "expireElements_old", Value: false}, {Key: "expireElements_new", Value: true}}) {
		t.Fatalf("reply %s", bsonutil.Format(reply))
	}
	batch := firstBatch(t, mustCall(t, h, "test", bson.D{{Key: "find", Value: "carts"}}))
	if len(batch) != 1 {
		t.Fatalf("with expireElements the cart stays: %v", batch)
	}
	items, _ := bsonutil.Field(asDoc(t, batch[0]), "items")
	if lines := items.(bson.A); len(lines) != 1 || bsonutil.Format(lines[0]) != bsonutil.Format(item("fresh", 0)) {
		t.Fatalf("cart lines %v, want only the fresh one", lines)
	}
	if v, _ := bsonutil.Field(indexSpecNamed(t, h, "carts", "lines"), "expireElements"); v != true {
		t.Fatalf("listIndexes expireElements %v", v)
	}
	if reply := mustCall(t, h, "test", collModIndexCmd("carts", bson.D{{Key: "name", Value: "lines"}, {Key: "expireElements", Value: true}})); len(reply) != 0 {
		t.Fatalf("unchanged: reply %v", reply)
	}
	mustCall(t, h, "test", collModIndexCmd("carts", bson.D{{Key: "name", Value: "lines"}, {Key: "expireElements", Value: false}}))
	if ids := foundIDs(t, h, "carts"); len(ids) != 0 {
		t.Fatalf("expireElements off: the cart expires whole again: %v", ids)
	}
	wantCollModCode(t, h, "carts", bson.D{{Key: "name", Value: "plain"}, {Key: "expireElements", Value: true}}, mongoerr.InvalidOptions)
	wantCollModCode(t, h, "carts", bson.D{{Key: "name", Value: "at"}, {Key: "expireElements", Value: true}}, mongoerr.InvalidOptions)
	wantCollModCode(t, h, "carts", bson.D{{Key: "name", Value: "seen"}, {Key: "expireElements", Value: true}}, mongoerr.InvalidOptions)
	wantCollModCode(t, h, "carts", bson.D{{Key: "name", Value: "lines"}, {Key: "expireElements", Value: "yes"}}, mongoerr.TypeMismatch)
	mustCall(t, h, "test", collModIndexCmd("carts", bson.D{{Key: "name", Value: "lines"}, {Key: "expireElements", Value: true}}))
	wantCollModCode(t, h, "carts", bson.D{{Key: "name", Value: "lines"}, {Key: "lruLimit", Value: bson.D{{Key: "documents", Value: 5}}}}, mongoerr.InvalidOptions)
}

// TestCollModAllOrNothing: mongod's collMod is one oplog entry, so a
// command whose index part fails changes nothing, not even the validator
// given before it (the parts used to be separate writes, and the
// validator stayed).
func TestCollModAllOrNothing(t *testing.T) {
	h, _ := newTestHandler(t)
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "c"}})
	_, err := call(t, h, "test", bson.D{{Key: "collMod", Value: "c"},
		{Key: "validator", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 1}}}}},
		{Key: "index", Value: bson.D{{Key: "name", Value: "missing"}, {Key: "hidden", Value: true}}}})
	if me := mongoerr.As(err); err == nil || me.Code != mongoerr.IndexNotFound {
		t.Fatalf("collMod of a missing index: %v", err)
	}
	opts, _ := bsonutil.Field(listedCollection(t, h, "c"), "options")
	if _, ok := bsonutil.Field(opts.(bson.D), "validator"); ok {
		t.Fatalf("the validator of a refused collMod was applied: %v", opts)
	}
}

// TestCollModExpiryWarningSeconds: collMod sets, changes and ("off")
// removes a TTL index's expiryWarningSeconds, answering as lruLimit does,
// and refuses it on an index without expireAfterSeconds.
func TestCollModExpiryWarningSeconds(t *testing.T) {
	h, _ := newClockedHandler(t, clock.NewManual(clusteredT0))
	mustCall(t, h, "test", bson.D{{Key: "createIndexes", Value: "carts"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "touched", Value: 1}}}, {Key: "name", Value: "idle"}, {Key: "expireAfterSeconds", Value: 3600}, {Key: "expiryWarningSeconds", Value: 600}},
		bson.D{{Key: "key", Value: bson.D{{Key: "sku", Value: 1}}}, {Key: "name", Value: "sku"}},
	}}})
	mod := func(v any) bson.D {
		return mustCall(t, h, "test", collModIndexCmd("carts", bson.D{{Key: "name", Value: "idle"}, {Key: "expiryWarningSeconds", Value: v}}))
	}
	shown := func() any {
		v, _ := bsonutil.Field(indexSpecNamed(t, h, "carts", "idle"), "expiryWarningSeconds")
		return v
	}
	if reply, want := mod(900), (bson.D{{Key: "expiryWarningSeconds_old", Value: int64(600)}, {Key: "expiryWarningSeconds_new", Value: int64(900)}}); bsonutil.Format(reply) != bsonutil.Format(want) {
		t.Fatalf("reply %s, want %s", bsonutil.Format(reply), bsonutil.Format(want))
	}
	if v := shown(); v != int32(900) {
		t.Fatalf("listIndexes expiryWarningSeconds %v", v)
	}
	if reply := mod(900.0); len(reply) != 0 {
		t.Fatalf("unchanged: reply %v", reply)
	}
	if reply := mod("off"); bsonutil.Format(reply) != bsonutil.Format(bson.D{{Key: "expiryWarningSeconds_old", Value: int64(900)}}) {
		t.Fatalf("off: reply %s", bsonutil.Format(reply))
	}
	if v := shown(); v != nil {
		t.Fatalf("listIndexes still shows expiryWarningSeconds %v after off", v)
	}
	if reply := mod(60); len(reply) != 1 || reply[0].Key != "expiryWarningSeconds_new" {
		t.Fatalf("on again: reply %v", reply)
	}
	for _, v := range []any{0, 1.5, -3, "on", int64(1) << 31} {
		wantCollModCode(t, h, "carts", bson.D{{Key: "name", Value: "idle"}, {Key: "expiryWarningSeconds", Value: v}}, mongoerr.InvalidOptions)
	}
	wantCollModCode(t, h, "carts", bson.D{{Key: "name", Value: "sku"}, {Key: "expiryWarningSeconds", Value: 60}}, mongoerr.InvalidOptions)
	if v := shown(); v != int32(60) {
		t.Fatalf("refused collMods changed the index: %v", v)
	}
}
