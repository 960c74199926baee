package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func applyOps(ops ...bson.D) bson.D {
	list := bson.A{}
	for _, op := range ops {
		list = append(list, op)
	}
	return bson.D{{Key: "applyOps", Value: list}}
}

func entry(op, ns string, o bson.D, more ...bson.E) bson.D {
	return append(bson.D{{Key: "op", Value: op}, {Key: "ns", Value: ns}, {Key: "o", Value: o}}, more...)
}

// TestApplyOpsEntries: each kind of entry does what it says; an insert
// of an _id already there replaces it; an update of one not there is an
// upsert unless alwaysUpsert is false; update operators, replacements and
// diffs all apply.
func TestApplyOpsEntries(t *testing.T) {
	h, _ := newTestHandler(t)
	id := func(v int32) bson.D { return bson.D{{Key: "_id", Value: v}} }
	o2 := func(v int32) bson.E { return bson.E{Key: "o2", Value: id(v)} }
	reply := mustCall(t, h, "admin", applyOps(
		entry("i", "shop.c", bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(1)}}),
		entry("i", "shop.c", bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(2)}}),
		entry("u", "shop.c", bson.D{{Key: "$v", Value: int32(2)}, {Key: "diff", Value: bson.D{{Key: "u", Value: bson.D{{Key: "b", Value: "x"}}}}}}, o2(1)),
		entry("u", "shop.c", bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: int32(5)}}}}, o2(1)),
		entry("u", "shop.c", bson.D{{Key: "z", Value: true}}, o2(2)), // upserted
		entry("i", "shop.c", bson.D{{Key: "_id", Value: int32(3)}}),
		entry("d", "shop.c", id(3)),
		entry("d", "shop.c", id(4)), // not there: no error
		bson.D{{Key: "op", Value: "n"}, {Key: "ns", Value: ""}, {Key: "o", Value: bson.D{{Key: "msg", Value: "noop"}}}},
	))
	if n, _ := bsonutil.Field(reply, "applied"); n != int32(9) {
		t.Fatalf("reply %v", reply)
	}
	got := firstBatch(t, mustCall(t, h, "shop", bson.D{{Key: "find", Value: "c"}, {Key: "sort", Value: id(1)}}))
	want := bson.A{
		bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(7)}, {Key: "b", Value: "x"}},
		bson.D{{Key: "_id", Value: int32(2)}, {Key: "z", Value: true}},
	}
	if bsonutil.Compare(got, want) != 0 {
		t.Fatalf("documents %v, want %v", got, want)
	}
	off := append(applyOps(entry("u", "shop.c", bson.D{{Key: "y", Value: 1}}, o2(9))), bson.E{Key: "alwaysUpsert", Value: false})
	mustCall(t, h, "admin", off)
	if n := len(firstBatch(t, mustCall(t, h, "shop", bson.D{{Key: "find", Value: "c"}}))); n != 2 {
		t.Fatalf("alwaysUpsert false upserted: %d documents", n)
	}
}

// TestApplyOpsFailures: an entry that cannot apply (or that a client's
// write could not make) fails the command with its own error and mongod's applied / results fields; the entries
// before it stay applied.
func TestApplyOpsFailures(t *testing.T) {
	h, _ := newTestHandler(t)
	good := entry("i", "shop.c", bson.D{{Key: "_id", Value: int32(1)}})
	cases := []struct {
		name string
		bad  bson.D
		code mongoerr.Code
	}{
		{"an insert without _id", entry("i", "shop.c", bson.D{{Key: "a", Value: 1}}), mongoerr.NoSuchKey},
		{"an update without o2", entry("u", "shop.c", bson.D{{Key: "a", Value: 1}}), mongoerr.NoSuchKey},
		{"an unknown op", entry("x", "shop.c", bson.D{}), mongoerr.BadValue},
		{"a bad ns", entry("i", "nodot", bson.D{{Key: "_id", Value: 1}}), mongoerr.InvalidNamespace},
		{"a delete from a missing collection", entry("d", "shop.none", bson.D{{Key: "_id", Value: 1}}), mongoerr.NamespaceNotFound},
		{"a command it does not apply", entry("c", "shop.$cmd", bson.D{{Key: "shutdown", Value: 1}}), mongoerr.BadValue},
		{"a write to a collection the server keeps", entry("i", "shop.system.profile", bson.D{{Key: "_id", Value: 1}}), mongoerr.InvalidNamespace},
		{"a diff that changes _id", entry("u", "shop.c", bson.D{{Key: "$v", Value: int32(2)}, {Key: "diff", Value: bson.D{{Key: "u", Value: bson.D{{Key: "_id", Value: int32(9)}}}}}},
			bson.E{Key: "o2", Value: bson.D{{Key: "_id", Value: int32(1)}}}), mongoerr.ImmutableField},
		{"a time-series collection's create, its view over buckets", entry("c", "shop.$cmd", bson.D{{Key: "create", Value: "m"},
			{Key: "viewOn", Value: "system.buckets.m"},
			{Key: "pipeline", Value: bson.A{bson.D{{Key: "$_internalUnpackBucket", Value: bson.D{{Key: "timeField", Value: "t"}}}}}}}),
			mongoerr.OptionNotSupportedOnView},
		{"a diff that does not fit", entry("u", "shop.c", bson.D{{Key: "$v", Value: int32(2)}, {Key: "diff", Value: bson.D{{Key: "sa", Value: bson.D{{Key: "a", Value: true}}}}}},
			bson.E{Key: "o2", Value: bson.D{{Key: "_id", Value: int32(1)}}}), mongoerr.BadValue},
	}
	for _, c := range cases {
		_, err := call(t, h, "admin", applyOps(good, c.bad))
		e := mongoerr.As(err)
		if e == nil || e.Code != c.code {
			t.Errorf("%s: %v, want code %d", c.name, err, c.code)
			continue
		}
		reply := mongoerr.Reply(err)
		applied, _ := bsonutil.Field(reply, "applied")
		results, _ := bsonutil.Field(reply, "results")
		if applied != int32(2) || bsonutil.Compare(results, bson.A{false, false}) != 0 {
			t.Errorf("%s: reply %v", c.name, reply)
		}
	}
}
