package commands

import (
	"math"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

var clusteredT0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func idKey() bson.D { return bson.D{{Key: "_id", Value: 1}} }

func clusteredIndex(opts ...bson.E) bson.D {
	return append(bson.D{{Key: "key", Value: idKey()}, {Key: "unique", Value: true}}, opts...)
}

func TestCreateClusteredRefusals(t *testing.T) {
	cases := []struct {
		name string
		opts bson.D
		code mongoerr.Code
	}{
		{"expireAfterSeconds without clusteredIndex", bson.D{{Key: "expireAfterSeconds", Value: 10}}, mongoerr.InvalidOptions},
		{"clusteredIndex false with expireAfterSeconds", bson.D{{Key: "clusteredIndex", Value: false}, {Key: "expireAfterSeconds", Value: 10}}, mongoerr.InvalidOptions},
		{"legacy clusteredIndex: true", bson.D{{Key: "clusteredIndex", Value: true}}, mongoerr.Location5979703},
		{"unique false", bson.D{{Key: "clusteredIndex", Value: bson.D{{Key: "key", Value: idKey()}, {Key: "unique", Value: false}}}}, mongoerr.Location5979700},
		{"unique missing", bson.D{{Key: "clusteredIndex", Value: bson.D{{Key: "key", Value: idKey()}}}}, mongoerr.Location40414},
		{"unique a string, before an unknown field", bson.D{{Key: "clusteredIndex", Value: bson.D{{Key: "key", Value: idKey()}, {Key: "unique", Value: "yes"}, {Key: "sparse", Value: true}}}}, mongoerr.TypeMismatch},
		{"key not an object", bson.D{{Key: "clusteredIndex", Value: bson.D{{Key: "key", Value: "_id"}, {Key: "unique", Value: true}}}}, mongoerr.TypeMismatch},
		{"clusteredIndex a string", bson.D{{Key: "clusteredIndex", Value: "_id"}}, mongoerr.TypeMismatch},
		{"unknown field", bson.D{{Key: "clusteredIndex", Value: clusteredIndex(bson.E{Key: "sparse", Value: true})}}, mongoerr.Location40415},
		{"key on another field", bson.D{{Key: "clusteredIndex", Value: bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "unique", Value: true}}}}, mongoerr.InvalidIndexSpecificationOption},
		{"descending _id", bson.D{{Key: "clusteredIndex", Value: bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: -1}}}, {Key: "unique", Value: true}}}}, mongoerr.InvalidIndexSpecificationOption},
		{"compound key", bson.D{{Key: "clusteredIndex", Value: bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}, {Key: "b", Value: 1}}}, {Key: "unique", Value: true}}}}, mongoerr.InvalidIndexSpecificationOption},
		{"v 1", bson.D{{Key: "clusteredIndex", Value: clusteredIndex(bson.E{Key: "v", Value: 1})}}, mongoerr.Location5979704},
		{"negative expireAfterSeconds", bson.D{{Key: "clusteredIndex", Value: clusteredIndex()}, {Key: "expireAfterSeconds", Value: -1}}, mongoerr.InvalidOptions},
		{"expireAfterSeconds beyond the epoch", bson.D{{Key: "clusteredIndex", Value: clusteredIndex()}, {Key: "expireAfterSeconds", Value: int64(clusteredT0.Unix() + 1)}}, mongoerr.InvalidOptions},
		{"expireAfterSeconds overflowing milliseconds", bson.D{{Key: "clusteredIndex", Value: clusteredIndex()}, {Key: "expireAfterSeconds", Value: int64(math.MaxInt64)}}, mongoerr.InvalidOptions},
		{"expireAfterSeconds a string", bson.D{{Key: "clusteredIndex", Value: clusteredIndex()}, {Key: "expireAfterSeconds", Value: "10"}}, mongoerr.TypeMismatch},
		{"capped size", bson.D{{Key: "clusteredIndex", Value: clusteredIndex()}, {Key: "size", Value: 1000}}, mongoerr.Location6049200},
		{"capped max", bson.D{{Key: "clusteredIndex", Value: clusteredIndex()}, {Key: "max", Value: 10}}, mongoerr.Location6049204},
		{"idIndex", bson.D{{Key: "clusteredIndex", Value: clusteredIndex()}, {Key: "idIndex", Value: bson.D{{Key: "key", Value: idKey()}, {Key: "name", Value: "_id_"}}}}, mongoerr.InvalidOptions},
		{"a view", bson.D{{Key: "viewOn", Value: "src"}, {Key: "clusteredIndex", Value: clusteredIndex()}}, mongoerr.Location6026500},
		{"autoIndexId false", bson.D{{Key: "clusteredIndex", Value: clusteredIndex()}, {Key: "autoIndexId", Value: false}}, mongoerr.Location6026501},
	}
	h, _ := newClockedHandler(t, clock.NewManual(clusteredT0))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call(t, h, "test", append(bson.D{{Key: "create", Value: "c"}}, tc.opts...))
			if me := mongoerr.As(err); err == nil || me.Code != tc.code {
				t.Fatalf("create %v: %v, want code %d", tc.opts, err, tc.code)
			}
			if h.deps.Store.Collection("test", "c") != nil {
				t.Fatal("a refused create made the collection")
			}
		})
	}
}

func listedCollection(t *testing.T, h *Handler, name string) bson.D {
	t.Helper()
	out := mustCall(t, h, "test", bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: name}}}})
	batch := firstBatch(t, out)
	if len(batch) != 1 {
		t.Fatalf("listCollections %s: %v", name, batch)
	}
	return asDoc(t, batch[0])
}

// asDoc is a batch's document as bson.D (replies carry raw BSON).
func asDoc(t *testing.T, v any) bson.D {
	t.Helper()
	if d, ok := v.(bson.D); ok {
		return d
	}
	d, err := bsonutil.DecodeD(v.(bson.Raw), 0)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCreateClusteredListsAsMongod(t *testing.T) {
	h, _ := newClockedHandler(t, clock.NewManual(clusteredT0))
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "c"}, {Key: "clusteredIndex", Value: clusteredIndex(bson.E{Key: "name", Value: "by_id"})}, {Key: "expireAfterSeconds", Value: 3600.7}})
	entry := listedCollection(t, h, "c")
	opts, _ := bsonutil.Field(entry, "options")
	want := bson.D{
		{Key: "clusteredIndex", Value: bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "by_id"}, {Key: "unique", Value: true}}},
		{Key: "expireAfterSeconds", Value: int64(3600)},
	}
	if bsonutil.Format(opts) != bsonutil.Format(want) {
		t.Fatalf("options %s, want %s", bsonutil.Format(opts), bsonutil.Format(want))
	}
	if _, ok := bsonutil.Field(entry, "idIndex"); ok {
		t.Fatal("a clustered collection lists no idIndex")
	}
	out := mustCall(t, h, "test", bson.D{{Key: "listIndexes", Value: "c"}})
	batch := firstBatch(t, out)
	wantIx := bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "by_id"}, {Key: "unique", Value: true},
		{Key: "expireAfterSeconds", Value: int64(3600)}, {Key: "clustered", Value: true}}
	if len(batch) != 1 || bsonutil.Format(asDoc(t, batch[0])) != bsonutil.Format(wantIx) {
		t.Fatalf("listIndexes %v, want [%s]", batch, bsonutil.Format(wantIx))
	}
	// Without expireAfterSeconds: the default name, no expiry.
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "plain"}, {Key: "clusteredIndex", Value: clusteredIndex()}})
	opts, _ = bsonutil.Field(listedCollection(t, h, "plain"), "options")
	want = bson.D{{Key: "clusteredIndex", Value: bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}, {Key: "unique", Value: true}}}}
	if bsonutil.Format(opts) != bsonutil.Format(want) {
		t.Fatalf("options %s", bsonutil.Format(opts))
	}
}

func TestClusteredTTLHidesExpiredAndCollModChangesIt(t *testing.T) {
	clk := clock.NewManual(clusteredT0)
	h, _ := newClockedHandler(t, clk)
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "ev"}, {Key: "clusteredIndex", Value: clusteredIndex()}, {Key: "expireAfterSeconds", Value: 60}})
	docs := bson.A{
		bson.D{{Key: "_id", Value: bson.NewDateTimeFromTime(clusteredT0.Add(-90 * time.Second))}, {Key: "n", Value: 1}},
		bson.D{{Key: "_id", Value: bson.NewDateTimeFromTime(clusteredT0.Add(-30 * time.Second))}, {Key: "n", Value: 2}},
		bson.D{{Key: "_id", Value: bson.NewObjectIDFromTimestamp(clusteredT0.Add(-time.Hour))}, {Key: "n", Value: 3}},
	}
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "ev"}, {Key: "documents", Value: docs}})
	ns := func() []int32 {
		var out []int32
		for _, d := range firstBatch(t, mustCall(t, h, "test", bson.D{{Key: "find", Value: "ev"}})) {
			n, _ := bsonutil.Field(asDoc(t, d), "n")
			out = append(out, n.(int32))
		}
		return out
	}
	if got := ns(); len(got) != 2 || got[0] != 3 || got[1] != 2 {
		t.Fatalf("find %v: want 3 then 2 (the expired date gone, the ObjectId kept; in _id order, ObjectIds before dates)", got)
	}
	clk.Advance(30 * time.Second)
	if got := ns(); len(got) != 1 || got[0] != 3 {
		t.Fatalf("find 30 s later %v: want only the ObjectId", got)
	}
	reply := mustCall(t, h, "test", bson.D{{Key: "collMod", Value: "ev"}, {Key: "expireAfterSeconds", Value: "off"}})
	if len(reply) != 0 {
		t.Fatalf("collMod reply %v, want nothing but ok", reply)
	}
	if got := ns(); len(got) != 3 {
		t.Fatalf("expiry off: find %v, want all three", got)
	}
	opts, _ := bsonutil.Field(listedCollection(t, h, "ev"), "options")
	if _, ok := bsonutil.Field(opts.(bson.D), "expireAfterSeconds"); ok {
		t.Fatal("expireAfterSeconds still listed after off")
	}
	mustCall(t, h, "test", bson.D{{Key: "collMod", Value: "ev"}, {Key: "expireAfterSeconds", Value: 100}})
	if got := ns(); len(got) != 2 {
		t.Fatalf("expireAfterSeconds 100: find %v, want the -30 s date and the ObjectId", got)
	}
	refusals := []struct {
		coll  string
		value any
		code  mongoerr.Code
	}{
		{"ev", "on", mongoerr.InvalidOptions},
		{"ev", -5, mongoerr.InvalidOptions},
		{"ev", true, mongoerr.TypeMismatch},
		{"other", 10, mongoerr.InvalidOptions},
	}
	// A refused expireAfterSeconds leaves the rest of the request unapplied.
	_, err := call(t, h, "test", bson.D{{Key: "collMod", Value: "ev"}, {Key: "validator", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 100}}}}}, {Key: "expireAfterSeconds", Value: "soon"}})
	if me := mongoerr.As(err); err == nil || me.Code != mongoerr.InvalidOptions {
		t.Fatalf("collMod with a bad expireAfterSeconds: %v", err)
	}
	opts, _ = bsonutil.Field(listedCollection(t, h, "ev"), "options")
	if _, ok := bsonutil.Field(opts.(bson.D), "validator"); ok {
		t.Fatalf("the validator of a refused collMod was applied: %v", opts)
	}
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "other"}})
	for _, r := range refusals {
		_, err := call(t, h, "test", bson.D{{Key: "collMod", Value: r.coll}, {Key: "expireAfterSeconds", Value: r.value}})
		if me := mongoerr.As(err); err == nil || me.Code != r.code {
			t.Fatalf("collMod %s expireAfterSeconds %v: %v, want code %d", r.coll, r.value, err, r.code)
		}
	}
}

func TestCreateIndexesOnTheClusterKey(t *testing.T) {
	h, _ := newClockedHandler(t, clock.NewManual(clusteredT0))
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "c"}, {Key: "clusteredIndex", Value: clusteredIndex(bson.E{Key: "name", Value: "by_id"})}})
	create := func(spec bson.D) (bson.D, error) {
		return call(t, h, "test", bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{spec}}})
	}
	out, err := create(bson.D{{Key: "key", Value: idKey()}, {Key: "name", Value: "_id_"}})
	if note, _ := bsonutil.Field(out, "note"); err != nil || note != "all indexes already exist" {
		t.Fatalf("the cluster key's index: %v %v, want it to exist already", out, err)
	}
	if _, err := create(bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "by_id"}}); mongoerr.As(err).Code != mongoerr.Location6100906 {
		t.Fatalf("the clustered index's name on another key: %v", err)
	}
	mustCall(t, h, "test", bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}}}})
	if n := len(firstBatch(t, mustCall(t, h, "test", bson.D{{Key: "listIndexes", Value: "c"}}))); n != 2 {
		t.Fatalf("%d indexes listed, want the clustered one and a_1", n)
	}
	for _, index := range []any{"by_id", idKey(), bson.A{"a_1", "by_id"}} {
		if _, err := call(t, h, "test", bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: index}}); mongoerr.As(err).Code != mongoerr.Location5979800 {
			t.Fatalf("dropIndexes %v: %v, want 5979800", index, err)
		}
	}
	mustCall(t, h, "test", bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "*"}})
	if n := len(firstBatch(t, mustCall(t, h, "test", bson.D{{Key: "listIndexes", Value: "c"}}))); n != 1 {
		t.Fatalf("%d indexes after dropping *, want the clustered one", n)
	}
}
