package commands

import (
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/txnrules"
)

// TestEveryStatementWriteAnswersAsOneByOne: every retryable write
// command of several statements goes through the statement runner, and
// answers, and leaves the collection, exactly as the same statements sent
// one command each: inserts across more than one group with duplicate and
// invalid documents; updates and deletes by _id (numbers that are one
// _id, a collation that folds a string _id, upserts, one whose document
// has another _id, failures, a statement that changes nothing) with
// statements of other shapes between them; and a bulkWrite of them all
// with a namespace that fails; ordered and not. A retryable write command
// without a row fails.
func TestEveryStatementWriteAnswersAsOneByOne(t *testing.T) {
	rows := map[string]func(t *testing.T, grouped, alone *Handler, ordered bool){
		"insert": func(t *testing.T, grouped, alone *Handler, ordered bool) {
			got := compareWrites(t, grouped, alone, "insert", "documents", insertStatements(), ordered)
			want := "{70 0 [] [11:11000 42:11000 69:52]}"
			if ordered {
				want = "{11 0 [] [11:11000]}"
			}
			if s := fmt.Sprint(writeSummary{n: got.n, errors: codesOnly(got.errors)}); s != want {
				t.Fatalf("inserted and failed: %s, want %s", s, want)
			}
		},
		"update": func(t *testing.T, grouped, alone *Handler, ordered bool) {
			compareWrites(t, grouped, alone, "update", "updates", updateStatements(), ordered)
		},
		"delete": func(t *testing.T, grouped, alone *Handler, ordered bool) {
			compareWrites(t, grouped, alone, "delete", "deletes", deleteStatements(), ordered)
		},
		"bulkWrite": compareBulkWrites,
	}
	// findAndModify writes one document: it has no statements to group.
	oneStatement := map[string]bool{"findAndModify": true}
	for _, name := range txnrules.RetryableWrites() {
		if _, ok := rows[name]; !ok && !oneStatement[name] {
			t.Errorf("retryable write %s has no row", name)
		}
	}
	for name, row := range rows {
		for _, ordered := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/ordered=%v", name, ordered), func(t *testing.T) {
				grouped, alone := groupTestHandler(t), groupTestHandler(t)
				row(t, grouped, alone, ordered)
				if g, a := allDocs(t, grouped), allDocs(t, alone); g != a {
					t.Fatalf("documents differ:\ngrouped %s\nalone   %s", g, a)
				}
			})
		}
	}
}

var groupColl = bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}

// insertStatements are 70 new documents, more than one group, between
// which one repeats an _id of the batch, one an _id of the collection,
// and one has an _id no document may have.
func insertStatements() []bson.D {
	var docs []bson.D
	for i := range 70 {
		docs = append(docs, bson.D{{Key: "_id", Value: 200 + i}, {Key: "n", Value: i}})
		switch i {
		case 10:
			docs = append(docs, bson.D{{Key: "_id", Value: 205}})
		case 40:
			docs = append(docs, bson.D{{Key: "_id", Value: 3}})
		case 66:
			docs = append(docs, bson.D{{Key: "_id", Value: bson.D{{Key: "$x", Value: 1}}}})
		}
	}
	return docs
}

func updateStatements() []bson.D {
	coll := groupColl
	set := func(k string, v any) bson.D { return bson.D{{Key: "$set", Value: bson.D{{Key: k, Value: v}}}} }
	upd := func(q, u bson.D, extra ...bson.E) bson.D {
		return append(bson.D{{Key: "q", Value: q}, {Key: "u", Value: u}}, extra...)
	}
	id := func(v any) bson.D { return bson.D{{Key: "_id", Value: v}} }
	return []bson.D{
		upd(id(1), bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}),
		upd(id(1.0), bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}),
		upd(id(int64(2)), set("x", 1)),
		upd(id(15), set("_id", 16)), // fails in its group
		upd(id(17), set("x", 1)),
		upd(id("a"), set("y", 1), bson.E{Key: "collation", Value: coll}),
		upd(id("b"), set("y", 2), bson.E{Key: "collation", Value: coll}),
		upd(id(50), set("n", 50), bson.E{Key: "upsert", Value: true}),
		upd(id(51), bson.D{{Key: "_id", Value: 52}, {Key: "n", Value: 0}}, bson.E{Key: "upsert", Value: true}),
		upd(id(3), bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: "x"}}}}),
		upd(id(4), set("n", 4)),
		upd(id(99), set("n", 99)),
		upd(id(5), bson.D{{Key: "$unset", Value: bson.D{{Key: "n", Value: ""}}}}),
		upd(id(6), set("_id", 7)),
		upd(bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: 18}}}}, set("z", 1)),
		upd(id(8), bson.D{{Key: "m", Value: 1}}),
		upd(id(9), set("n", -9)),
	}
}

func deleteStatements() []bson.D {
	coll := groupColl
	id := func(v any) bson.D { return bson.D{{Key: "_id", Value: v}} }
	return []bson.D{
		{{Key: "q", Value: id(10)}, {Key: "limit", Value: 1}},
		{{Key: "q", Value: id(10.0)}, {Key: "limit", Value: 1}},
		{{Key: "q", Value: id("b")}, {Key: "limit", Value: 1}, {Key: "collation", Value: coll}},
		{{Key: "q", Value: id(30)}, {Key: "limit", Value: 1}},
		{{Key: "q", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{11, 12}}}}}}, {Key: "limit", Value: 1}},
		{{Key: "q", Value: id(13)}, {Key: "limit", Value: 1}},
	}
}

// asSent is d as the server decodes it from the wire: Go ints become
// int32 or int64, as a driver sends them.
func asSent(t *testing.T, d bson.D) bson.D {
	t.Helper()
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	out, err := bsonutil.DecodeD(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func groupTestHandler(t *testing.T) *Handler {
	h, _ := newTestHandler(t)
	docs := bson.A{bson.D{{Key: "_id", Value: "A"}, {Key: "n", Value: 100}}, bson.D{{Key: "_id", Value: "B"}, {Key: "n", Value: 101}}}
	for i := range 20 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: i}})
	}
	mustCall(t, h, "test", asSent(t, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}}))
	return h
}

// compareWrites runs stmts as one command on grouped and one command each
// on alone (stopping at the first failure when ordered), compares the
// two results, and returns the first.
func compareWrites(t *testing.T, grouped, alone *Handler, name, field string, stmts []bson.D, ordered bool) writeSummary {
	t.Helper()
	cmd := func(s bson.A) bson.D {
		return asSent(t, bson.D{{Key: name, Value: "c"}, {Key: field, Value: s}, {Key: "ordered", Value: ordered}})
	}
	var all bson.A
	for _, s := range stmts {
		all = append(all, s)
	}
	got := summary(t, mustCall(t, grouped, "test", cmd(all)), 0)
	want := writeSummary{}
	for i, s := range stmts {
		one := summary(t, mustCall(t, alone, "test", cmd(bson.A{s})), i)
		want.add(one)
		if ordered && len(one.errors) > 0 {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\ngrouped %+v\nalone   %+v", name, got, want)
	}
	return got
}

// codesOnly is summary's errors without their messages: "index:code".
func codesOnly(errs []string) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		parts := strings.SplitN(e, ":", 3)
		out[i] = parts[0] + ":" + parts[1]
	}
	return out
}

// writeSummary is a write reply's counts, upserts and errors, statement
// indexes shifted by the statement's place in the whole.
type writeSummary struct {
	n, modified int32
	upserted    []string
	errors      []string
}

func summary(t *testing.T, r bson.D, base int) writeSummary {
	t.Helper()
	var s writeSummary
	n, _ := bsonutil.Field(r, "n")
	s.n = n.(int32)
	if m, ok := bsonutil.Field(r, "nModified"); ok {
		s.modified = m.(int32)
	}
	up, _ := bsonutil.Field(r, "upserted")
	for _, u := range asArrayOrNil(up) {
		i, _ := bsonutil.Field(u.(bson.D), "index")
		v, _ := bsonutil.Field(u.(bson.D), "_id")
		s.upserted = append(s.upserted, fmt.Sprintf("%d:%v", base+int(i.(int32)), v))
	}
	errs, _ := bsonutil.Field(r, "writeErrors")
	for _, e := range asArrayOrNil(errs) {
		i, _ := bsonutil.Field(e.(bson.D), "index")
		code, _ := bsonutil.Field(e.(bson.D), "code")
		msg, _ := bsonutil.Field(e.(bson.D), "errmsg")
		s.errors = append(s.errors, fmt.Sprintf("%d:%v:%v", base+int(i.(int32)), code, msg))
	}
	return s
}

func (s *writeSummary) add(o writeSummary) {
	s.n += o.n
	s.modified += o.modified
	s.upserted = append(s.upserted, o.upserted...)
	s.errors = append(s.errors, o.errors...)
}

func asArrayOrNil(v any) bson.A {
	if v == nil {
		return nil
	}
	return v.(bson.A)
}

// allDocs is the collection's documents in _id order, printed.
func allDocs(t *testing.T, h *Handler) string {
	t.Helper()
	r := mustCall(t, h, "test", bson.D{{Key: "find", Value: "c"}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "batchSize", Value: 1000}})
	return fmt.Sprint(firstBatch(t, r))
}

// TestFailedStatementCountsNothing: a statement that matched and then
// failed (here on the immutable _id) adds nothing to n, as on mongod,
// where only the statements that succeed have a result to count.
func TestFailedStatementCountsNothing(t *testing.T) {
	h := groupTestHandler(t)
	r := mustCall(t, h, "test", asSent(t, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 6}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "_id", Value: 7}}}}}},
	}}}))
	s := summary(t, r, 0)
	if s.n != 0 || s.modified != 0 || len(s.errors) != 1 || !strings.HasPrefix(s.errors[0], "0:66:") {
		t.Fatalf("an update that fails on _id: %+v", s)
	}
}

// compareBulkWrites runs a bulkWrite of runs of updates, deletes and
// inserts, some failing, some into a namespace that fails, as one
// command on grouped and one command each on alone, and compares the
// results op by op and the totals.
func compareBulkWrites(t *testing.T, grouped, alone *Handler, ordered bool) {
	coll := groupColl
	update := func(id any, mods bson.D, extra ...bson.E) bson.D {
		return append(bson.D{{Key: "update", Value: 0}, {Key: "filter", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "updateMods", Value: mods}}, extra...)
	}
	remove := func(id any, extra ...bson.E) bson.D {
		return append(bson.D{{Key: "delete", Value: 0}, {Key: "filter", Value: bson.D{{Key: "_id", Value: id}}}}, extra...)
	}
	insert := func(ns int, id any) bson.D {
		return bson.D{{Key: "insert", Value: ns}, {Key: "document", Value: bson.D{{Key: "_id", Value: id}}}}
	}
	inc := func(v any) bson.D { return bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: v}}}} }
	ops := []bson.D{
		update(1, inc(1)), update(1.0, inc(1)), update(int64(2), inc(5)),
		update(15, bson.D{{Key: "$set", Value: bson.D{{Key: "_id", Value: 16}}}}), update(17, inc(1)), // fails in its group
		update("a", inc(1), bson.E{Key: "collation", Value: coll}), update("b", inc(1), bson.E{Key: "collation", Value: coll}),
		update(50, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 50}}}}, bson.E{Key: "upsert", Value: true}),
		update(3, inc("x")), update(4, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 4}}}}), update(99, inc(1)),
		update(5, bson.D{{Key: "m", Value: 1}}), update(6, bson.D{{Key: "$set", Value: bson.D{{Key: "_id", Value: 7}}}}),
		remove(10), remove(10.0), remove(11), remove(30), remove("b", bson.E{Key: "collation", Value: coll}), remove(12),
		update(13, inc(1)), update(14, inc(1)),
		insert(0, 300), insert(0, 300), insert(0, 1), insert(0, bson.D{{Key: "$x", Value: 1}}),
		bson.D{{Key: "insert", Value: 0}}, insert(0, 301), insert(1, 302), insert(1, 303), insert(0, 304),
	}
	bulk := func(h *Handler, ops bson.A) bson.D {
		return mustCall(t, h, "admin", asSent(t, bson.D{{Key: "bulkWrite", Value: 1}, {Key: "ops", Value: ops},
			{Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "test.c"}}, bson.D{{Key: "ns", Value: "test"}}}}, {Key: "ordered", Value: ordered}}))
	}
	var all bson.A
	for _, op := range ops {
		all = append(all, op)
	}
	reply := bulk(grouped, all)
	got := append(bulkResults(t, reply, 0), fmt.Sprint(bulkTotalsOf(reply, nil)))
	var want []string
	var totals []int32
	for i, op := range ops {
		reply := bulk(alone, bson.A{op})
		one := bulkResults(t, reply, i)
		want = append(want, one...)
		totals = bulkTotalsOf(reply, totals)
		if ordered && strings.Contains(one[0], "ok:0") {
			break
		}
	}
	want = append(want, fmt.Sprint(totals))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("results:\ngrouped %v\nalone   %v", got, want)
	}
}

// bulkResults prints a bulkWrite reply's per-op results, idx shifted by
// base.
func bulkResults(t *testing.T, r bson.D, base int) []string {
	t.Helper()
	var out []string
	for _, x := range firstBatch(t, r) {
		d := rawDoc(t, x)
		var parts []string
		for _, e := range d {
			v := e.Value
			if e.Key == "idx" {
				v = base + int(v.(int32))
			}
			parts = append(parts, fmt.Sprintf("%s:%v", e.Key, v))
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

var bulkTotalNames = []string{"nErrors", "nInserted", "nMatched", "nModified", "nUpserted", "nDeleted"}

// bulkTotalsOf adds a bulkWrite reply's totals to sum.
func bulkTotalsOf(r bson.D, sum []int32) []int32 {
	if sum == nil {
		sum = make([]int32, len(bulkTotalNames))
	}
	for i, name := range bulkTotalNames {
		v, _ := bsonutil.Field(r, name)
		sum[i] += v.(int32)
	}
	return sum
}
