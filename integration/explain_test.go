package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// explainFind runs {explain: cmd, verbosity}.
func explainFind(t *testing.T, db *mongo.Database, cmd bson.D, verbosity string) bson.D {
	t.Helper()
	return runCmd(t, db, bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: verbosity}})
}

// planStages names the stages of an explain's winning plan, top first:
// "LIMIT>FETCH>IXSCAN".
func planStages(t *testing.T, explain bson.D) string {
	t.Helper()
	qp := field(t, explain, "queryPlanner").(bson.D)
	return stageChain(t, field(t, qp, "winningPlan").(bson.D))
}

func stageChain(t *testing.T, stage bson.D) string {
	t.Helper()
	var names []string
	for stage != nil {
		names = append(names, field(t, stage, "stage").(string))
		next, _ := lookupDoc(stage, "inputStage")
		stage = next
	}
	return strings.Join(names, ">")
}

func lookupDoc(d bson.D, key string) (bson.D, bool) {
	for _, e := range d {
		if e.Key == key {
			sub, ok := e.Value.(bson.D)
			return sub, ok
		}
	}
	return nil, false
}

// stageNamed finds the first stage of the given name in a stage tree.
func stageNamed(t *testing.T, stage bson.D, name string) bson.D {
	t.Helper()
	for stage != nil {
		if field(t, stage, "stage") == name {
			return stage
		}
		stage, _ = lookupDoc(stage, "inputStage")
	}
	t.Fatalf("no %s stage", name)
	return nil
}

// bounds renders an IXSCAN's indexBounds as "a: [1, 1]; b: [MinKey, MaxKey]".
func bounds(t *testing.T, ixscan bson.D) string {
	t.Helper()
	var parts []string
	for _, e := range field(t, ixscan, "indexBounds").(bson.D) {
		var ivals []string
		for _, iv := range e.Value.(bson.A) {
			ivals = append(ivals, iv.(string))
		}
		parts = append(parts, e.Key+": "+strings.Join(ivals, ", "))
	}
	return strings.Join(parts, "; ")
}

func execStats(t *testing.T, explain bson.D) bson.D {
	t.Helper()
	return field(t, explain, "executionStats").(bson.D)
}

// wantCounts checks nReturned, totalKeysExamined and totalDocsExamined.
func wantCounts(t *testing.T, explain bson.D, returned, keys, docs int64) {
	t.Helper()
	es := execStats(t, explain)
	got := [3]int64{toInt64(field(t, es, "nReturned")), toInt64(field(t, es, "totalKeysExamined")), toInt64(field(t, es, "totalDocsExamined"))}
	if got != [3]int64{returned, keys, docs} {
		t.Fatalf("nReturned/keys/docs = %v, want %v", got, [3]int64{returned, keys, docs})
	}
}

func tokenDocs(n int) []any {
	docs := make([]any, 0, n)
	for i := 0; i < n; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "token", Value: fmt.Sprintf("tok-%06d", i)}, {Key: "n", Value: i % 10}})
	}
	return docs
}

func tokenDB(t *testing.T, n int) *mongo.Database {
	t.Helper()
	db := newDB(t)
	if _, err := db.Collection("s").InsertMany(ctxT(t), tokenDocs(n)); err != nil {
		t.Fatal(err)
	}
	mustCreateIndex(t, db, "s", keySpec(bson.D{{Key: "token", Value: 1}}))
	mustCreateIndex(t, db, "s", keySpec(bson.D{{Key: "n", Value: 1}, {Key: "token", Value: -1}}))
	return db
}

func TestExplainFindByIndexedField(t *testing.T) {
	db := tokenDB(t, 5000)
	cmd := bson.D{{Key: "find", Value: "s"}, {Key: "filter", Value: bson.D{{Key: "token", Value: "tok-002500"}}}}
	ex := explainFind(t, db, cmd, "executionStats")
	if field(t, ex, "explainVersion") != "1" || field(t, ex, "ok") != 1.0 {
		t.Fatalf("explain %v", ex)
	}
	if got := planStages(t, ex); got != "FETCH>IXSCAN" {
		t.Fatalf("stages %s", got)
	}
	wantCounts(t, ex, 1, 1, 1)
	qp := field(t, ex, "queryPlanner").(bson.D)
	if field(t, qp, "namespace") != "test.s" || len(field(t, qp, "rejectedPlans").(bson.A)) != 0 {
		t.Fatalf("queryPlanner %v", qp)
	}
	if got := fmt.Sprint(field(t, qp, "parsedQuery")); got != `{"token":{"$eq":"tok-002500"}}` {
		t.Fatalf("parsedQuery %s", got)
	}
	ix := stageNamed(t, field(t, qp, "winningPlan").(bson.D), "IXSCAN")
	if field(t, ix, "indexName") != "token_1" || field(t, ix, "direction") != "forward" {
		t.Fatalf("IXSCAN %v", ix)
	}
	if got := bounds(t, ix); got != `token: ["tok-002500", "tok-002500"]` {
		t.Fatalf("bounds %s", got)
	}
	stages := field(t, execStats(t, ex), "executionStages").(bson.D)
	xs := stageNamed(t, stages, "IXSCAN")
	if toInt64(field(t, xs, "keysExamined")) != 1 || toInt64(field(t, stageNamed(t, stages, "FETCH"), "docsExamined")) != 1 {
		t.Fatalf("executionStages %v", stages)
	}
	cmdEcho := field(t, ex, "command").(bson.D)
	if field(t, cmdEcho, "$db") != "test" || field(t, cmdEcho, "find") != "s" {
		t.Fatalf("command %v", cmdEcho)
	}
	for _, k := range []string{"host", "port", "version", "gitVersion"} {
		field(t, field(t, ex, "serverInfo").(bson.D), k)
	}
	field(t, field(t, ex, "serverParameters").(bson.D), "internalQueryMaxBlockingSortMemoryUsageBytes")
}

// The Go driver's explain path is the explain command too; the default
// verbosity adds allPlansExecution.
func TestExplainVerbosities(t *testing.T) {
	db := tokenDB(t, 100)
	cmd := bson.D{{Key: "find", Value: "s"}, {Key: "filter", Value: bson.D{{Key: "n", Value: 3}}}}
	qp := explainFind(t, db, cmd, "queryPlanner")
	if _, ok := lookupDoc(qp, "executionStats"); ok {
		t.Fatal("queryPlanner verbosity must not execute")
	}
	all := runCmd(t, db, bson.D{{Key: "explain", Value: cmd}})
	if _, ok := field(t, execStats(t, all), "allPlansExecution").(bson.A); !ok {
		t.Fatalf("allPlansExecution: %v", all)
	}
	wantCounts(t, all, 10, 10, 10)
}

func TestExplainStageNames(t *testing.T) {
	db := tokenDB(t, 200)
	find := func(extra ...bson.E) bson.D { return append(bson.D{{Key: "find", Value: "s"}}, extra...) }
	filter := func(f bson.D) bson.E { return bson.E{Key: "filter", Value: f} }
	sortBy := func(s bson.D) bson.E { return bson.E{Key: "sort", Value: s} }
	cases := []struct {
		name   string
		cmd    bson.D
		stages string
		counts [3]int64
	}{
		{"collection scan", find(filter(bson.D{{Key: "x", Value: 1}})), "COLLSCAN", [3]int64{0, 0, 200}},
		{"find by _id", find(filter(bson.D{{Key: "_id", Value: 7}})), "EXPRESS_IXSCAN", [3]int64{1, 1, 1}},
		{"findOne by _id", find(filter(bson.D{{Key: "_id", Value: 7}}), bson.E{Key: "limit", Value: 1}, bson.E{Key: "singleBatch", Value: true}), "EXPRESS_IXSCAN", [3]int64{1, 1, 1}},
		{"_id with a projection", find(filter(bson.D{{Key: "_id", Value: 7}}), bson.E{Key: "projection", Value: bson.D{{Key: "n", Value: 1}}}), "PROJECTION_SIMPLE>IDHACK", [3]int64{1, 1, 1}},
		{"_id $in", find(filter(bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{1, 2, 999}}}}})), "FETCH>IXSCAN", [3]int64{2, 3, 2}},
		{"blocking sort", find(sortBy(bson.D{{Key: "token", Value: -1}, {Key: "n", Value: 1}})), "SORT>COLLSCAN", [3]int64{200, 0, 200}},
		{"sort from the index", find(sortBy(bson.D{{Key: "token", Value: -1}}), bson.E{Key: "limit", Value: 3}), "LIMIT>FETCH>IXSCAN", [3]int64{3, 3, 3}},
		{"equality prefix then sort", find(filter(bson.D{{Key: "n", Value: 4}}), sortBy(bson.D{{Key: "token", Value: 1}})), "FETCH>IXSCAN", [3]int64{20, 20, 20}},
		{"top-k sort with skip", find(filter(bson.D{{Key: "n", Value: 4}}), sortBy(bson.D{{Key: "_id", Value: -1}, {Key: "n", Value: 1}}), bson.E{Key: "skip", Value: 2}, bson.E{Key: "limit", Value: 5}), "SKIP>SORT>FETCH>IXSCAN", [3]int64{5, 20, 20}},
		{"skip and limit", find(bson.E{Key: "skip", Value: 5}, bson.E{Key: "limit", Value: 2}), "LIMIT>SKIP>COLLSCAN", [3]int64{2, 0, 7}},
		{"computed projection", find(bson.E{Key: "projection", Value: bson.D{{Key: "t", Value: bson.D{{Key: "$toUpper", Value: "$token"}}}}}), "PROJECTION_DEFAULT>COLLSCAN", [3]int64{200, 0, 200}},
		{"hinted index", find(filter(bson.D{{Key: "n", Value: 4}}), bson.E{Key: "hint", Value: "token_1"}), "FETCH>IXSCAN", [3]int64{20, 200, 200}},
		{"$natural hint", find(filter(bson.D{{Key: "token", Value: "tok-000001"}}), bson.E{Key: "hint", Value: bson.D{{Key: "$natural", Value: -1}}}), "COLLSCAN", [3]int64{1, 0, 200}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := explainFind(t, db, tc.cmd, "executionStats")
			if got := planStages(t, ex); got != tc.stages {
				t.Fatalf("stages %s, want %s", got, tc.stages)
			}
			wantCounts(t, ex, tc.counts[0], tc.counts[1], tc.counts[2])
			if got := stageChain(t, field(t, execStats(t, ex), "executionStages").(bson.D)); got != tc.stages {
				t.Fatalf("executionStages %s, want %s", got, tc.stages)
			}
		})
	}
}

func TestExplainSortShapes(t *testing.T) {
	db := tokenDB(t, 50)
	ex := explainFind(t, db, bson.D{{Key: "find", Value: "s"}, {Key: "sort", Value: bson.D{{Key: "n", Value: -1}}}, {Key: "limit", Value: 4}}, "executionStats")
	if got := planStages(t, ex); got != "LIMIT>FETCH>IXSCAN" {
		t.Fatalf("stages %s", got)
	}
	ix := stageNamed(t, field(t, field(t, ex, "queryPlanner").(bson.D), "winningPlan").(bson.D), "IXSCAN")
	if field(t, ix, "direction") != "backward" || bounds(t, ix) != `n: [MaxKey, MinKey]; token: [MinKey, MaxKey]` {
		t.Fatalf("IXSCAN %v", ix)
	}
	// No document holds an array: the bounded index field gives the order.
	gt7 := bson.D{{Key: "find", Value: "s"}, {Key: "filter", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 7}}}}}, {Key: "sort", Value: bson.D{{Key: "n", Value: 1}}}}
	ex = explainFind(t, db, gt7, "executionStats")
	if got := planStages(t, ex); got != "FETCH>IXSCAN" {
		t.Fatalf("stages on a non-multikey index: %s", got)
	}
	// Once one does, an element outside the bounds may decide its place:
	// the scan no longer gives the order (mongod's multikey rule).
	insertDocs(t, db.Collection("s"), bson.D{{Key: "n", Value: bson.A{100, -1}}, {Key: "token", Value: "arr"}})
	ex = explainFind(t, db, gt7, "executionStats")
	sortSt := stageNamed(t, field(t, field(t, ex, "queryPlanner").(bson.D), "winningPlan").(bson.D), "SORT")
	if fmt.Sprint(field(t, sortSt, "sortPattern")) != `{"n":{"$numberInt":"1"}}` || toInt64(field(t, sortSt, "memLimit")) != 100<<20 || field(t, sortSt, "type") != "simple" {
		t.Fatalf("SORT %v", sortSt)
	}
	ix = stageNamed(t, sortSt, "IXSCAN")
	if bounds(t, ix) != `n: (7, inf.0]; token: [MaxKey, MinKey]` {
		t.Fatalf("bounds %v", field(t, ix, "indexBounds"))
	}
	wantCounts(t, ex, 11, 11, 11)
}

func TestExplainOtherCommands(t *testing.T) {
	db := tokenDB(t, 100)
	c := db.Collection("s")
	q := bson.D{{Key: "n", Value: 2}}
	cases := []struct {
		name   string
		cmd    bson.D
		stages string
		counts [3]int64
		extra  map[string]any
	}{
		{"count", bson.D{{Key: "count", Value: "s"}, {Key: "query", Value: q}}, "COUNT>FETCH>IXSCAN", [3]int64{0, 10, 10}, map[string]any{"nCounted": int64(10)}},
		{"fast count", bson.D{{Key: "count", Value: "s"}}, "RECORD_STORE_FAST_COUNT", [3]int64{0, 0, 0}, map[string]any{"nCounted": int64(100)}},
		{"distinct", bson.D{{Key: "distinct", Value: "s"}, {Key: "key", Value: "token"}, {Key: "query", Value: q}}, "FETCH>IXSCAN", [3]int64{10, 10, 10}, nil},
		{"update", bson.D{{Key: "update", Value: "s"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: q}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}}, {Key: "multi", Value: true}}}}},
			"UPDATE>FETCH>IXSCAN", [3]int64{0, 10, 10}, map[string]any{"nMatched": int64(10), "nWouldModify": int64(10), "nWouldUpsert": false}},
		{"delete one", bson.D{{Key: "delete", Value: "s"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: q}, {Key: "limit", Value: 1}}}}},
			"DELETE>FETCH>IXSCAN", [3]int64{0, 1, 1}, map[string]any{"nWouldDelete": int64(1)}},
		{"findAndModify with sort", bson.D{{Key: "findAndModify", Value: "s"}, {Key: "query", Value: q}, {Key: "sort", Value: bson.D{{Key: "token", Value: -1}}}, {Key: "update", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}},
			"UPDATE>SORT>FETCH>IXSCAN", [3]int64{0, 10, 10}, map[string]any{"nMatched": int64(1), "nWouldModify": int64(1)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := explainFind(t, db, tc.cmd, "executionStats")
			if got := planStages(t, ex); got != tc.stages {
				t.Fatalf("stages %s, want %s", got, tc.stages)
			}
			wantCounts(t, ex, tc.counts[0], tc.counts[1], tc.counts[2])
			top := field(t, execStats(t, ex), "executionStages").(bson.D)
			for k, v := range tc.extra {
				got := field(t, top, k)
				if b, isBool := v.(bool); (isBool && got != b) || (!isBool && toInt64(got) != v.(int64)) {
					t.Fatalf("%s = %v, want %v", k, got, v)
				}
			}
		})
	}
	// Explaining a write changes nothing.
	if n, err := c.CountDocuments(ctxT(t), bson.D{{Key: "x", Value: 1}}); err != nil || n != 0 {
		t.Fatalf("explain of update wrote: %d %v", n, err)
	}
	if n, err := c.CountDocuments(ctxT(t), bson.D{}); err != nil || n != 100 {
		t.Fatalf("explain of delete deleted: %d %v", n, err)
	}
}

func TestExplainAggregate(t *testing.T) {
	db := tokenDB(t, 100)
	group := bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$n"}}}}
	match := bson.D{{Key: "$match", Value: bson.D{{Key: "n", Value: 3}}}}
	agg := func(stages ...bson.D) bson.D {
		p := bson.A{}
		for _, s := range stages {
			p = append(p, s)
		}
		return bson.D{{Key: "aggregate", Value: "s"}, {Key: "pipeline", Value: p}, {Key: "cursor", Value: bson.D{}}}
	}
	ex := explainFind(t, db, agg(match, group), "executionStats")
	stages := field(t, ex, "stages").(bson.A)
	cur := field(t, stages[0].(bson.D), "$cursor").(bson.D)
	if got := planStages(t, cur); got != "FETCH>IXSCAN" || len(stages) != 2 || stages[1].(bson.D)[0].Key != "$group" {
		t.Fatalf("stages %s, pipeline %v", got, stages)
	}
	wantCounts(t, cur, 10, 10, 10)
	// A pipeline the scan answers whole explains like a find; the $sort the
	// index provides is not run in memory.
	ex = explainFind(t, db, agg(match, bson.D{{Key: "$sort", Value: bson.D{{Key: "token", Value: -1}}}}), "executionStats")
	if got := planStages(t, ex); got != "FETCH>IXSCAN" {
		t.Fatalf("stages %s (%v)", got, ex)
	}
	// The explain option answers at queryPlanner verbosity.
	opt := runCmd(t, db, append(agg(match, group)[:2], bson.E{Key: "explain", Value: true}))
	if _, ok := lookupDoc(field(t, field(t, opt, "stages").(bson.A)[0].(bson.D), "$cursor").(bson.D), "executionStats"); ok {
		t.Fatalf("explain option executed: %v", opt)
	}
	// A leading $sort served by the index gives the documents in order.
	cursor, err := db.Collection("s").Aggregate(ctxT(t), mongo.Pipeline{{{Key: "$sort", Value: bson.D{{Key: "token", Value: -1}}}}, {{Key: "$limit", Value: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cursor.All(ctxT(t), &got); err != nil || len(got) != 2 || got[0]["token"] != "tok-000099" || got[1]["token"] != "tok-000098" {
		t.Fatalf("sorted aggregate %v %v", got, err)
	}
}

func TestExplainErrors(t *testing.T) {
	db := tokenDB(t, 10)
	cases := []struct {
		name string
		cmd  bson.D
		code int32
		msg  string
	}{
		{"not a document", bson.D{{Key: "explain", Value: 1}}, 2, "explain command requires a nested object"},
		{"bad verbosity", bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "s"}}}, {Key: "verbosity", Value: "loud"}}, 9, "verbosity string must be one of {'queryPlanner', 'executionStats', 'allPlansExecution'}"},
		{"unknown command", bson.D{{Key: "explain", Value: bson.D{{Key: "frob", Value: "s"}}}}, 59, "Explain failed due to unknown command: frob"},
		{"not explainable", bson.D{{Key: "explain", Value: bson.D{{Key: "insert", Value: "s"}, {Key: "documents", Value: bson.A{}}}}}, 20, "Cannot explain cmd: insert"},
		{"two updates", bson.D{{Key: "explain", Value: bson.D{{Key: "update", Value: "s"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}},
			bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}}}}}}}, 16, "explained write batches must be of size 1"},
		{"bad hint", bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "s"}, {Key: "hint", Value: "nope"}}}}, 2, "hint provided does not correspond to an existing index"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ce := cmdErr(t, db, tc.cmd)
			if ce.Code != tc.code || !strings.Contains(ce.Message, tc.msg) {
				t.Fatalf("got %d %q, want %d %q", ce.Code, ce.Message, tc.code, tc.msg)
			}
		})
	}
	ex := explainFind(t, db, bson.D{{Key: "find", Value: "missing"}}, "executionStats")
	if got := planStages(t, ex); got != "EOF" {
		t.Fatalf("explain of a missing collection: %s", got)
	}
}

// A bad hint fails every command that takes one, as in MongoDB.
func TestHintHonouredEverywhere(t *testing.T) {
	db := tokenDB(t, 20)
	ctx := ctxT(t)
	c := db.Collection("s")
	bad := "nope"
	q := bson.D{{Key: "n", Value: 1}}
	errs := map[string]error{
		"find":          c.FindOne(ctx, q, options.FindOne().SetHint(bad)).Err(),
		"count":         countErr(c.CountDocuments(ctx, q, options.Count().SetHint(bad))),
		"distinct":      c.Distinct(ctx, "token", q, options.Distinct().SetHint(bad)).Err(),
		"update":        updateErr(c.UpdateOne(ctx, q, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}, options.UpdateOne().SetHint(bad))),
		"delete":        deleteErr(c.DeleteOne(ctx, q, options.DeleteOne().SetHint(bad))),
		"findAndModify": c.FindOneAndUpdate(ctx, q, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}, options.FindOneAndUpdate().SetHint(bad)).Err(),
		"aggregate":     aggErr(c.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: q}}}, options.Aggregate().SetHint(bad))),
	}
	for name, err := range errs {
		t.Run(name, func(t *testing.T) {
			wantCode(t, err, 2, "hint provided does not correspond to an existing index")
		})
	}
	// A good hint is used: the count examines the hinted index whole.
	ex := explainFind(t, db, bson.D{{Key: "count", Value: "s"}, {Key: "query", Value: q}, {Key: "hint", Value: bson.D{{Key: "token", Value: 1}}}}, "executionStats")
	wantCounts(t, ex, 0, 20, 20)
	ex = explainFind(t, db, bson.D{{Key: "aggregate", Value: "s"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: q}}}}, {Key: "hint", Value: "token_1"}, {Key: "cursor", Value: bson.D{}}}, "executionStats")
	wantCounts(t, ex, 2, 20, 20)
}

func countErr(_ int64, err error) error                { return err }
func updateErr(_ *mongo.UpdateResult, err error) error { return err }
func deleteErr(_ *mongo.DeleteResult, err error) error { return err }
func aggErr(c *mongo.Cursor, err error) error {
	if c != nil {
		_ = c.Close(context.Background())
	}
	return err
}

// With an index providing the order, a sort over more than 100 MiB needs
// no memory and no allowDiskUse; a limit keeps only the top documents.
func TestIndexedSortAvoidsMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 105 MiB")
	}
	db := newDB(t)
	c := db.Collection("fat")
	blob := strings.Repeat("x", 1<<20)
	for i := 0; i < 105; i++ {
		insertDocs(t, c, bson.D{{Key: "n", Value: i}, {Key: "m", Value: i % 7}, {Key: "blob", Value: blob}})
	}
	_, err := c.Find(ctxT(t), bson.D{}, options.Find().SetSort(bson.D{{Key: "n", Value: -1}}))
	wantCode(t, err, 292, "Sort exceeded memory limit of 104857600 bytes, but did not opt in to external sorting.")
	cur, err := c.Find(ctxT(t), bson.D{}, options.Find().SetSort(bson.D{{Key: "m", Value: 1}}).SetLimit(3))
	if err != nil {
		t.Fatalf("top-k sort holds only the limit: %v", err)
	}
	_ = cur.Close(ctxT(t))
	mustCreateIndex(t, db, "fat", keySpec(bson.D{{Key: "n", Value: 1}}))
	cur, err = c.Find(ctxT(t), bson.D{}, options.Find().SetSort(bson.D{{Key: "n", Value: -1}}).SetProjection(bson.D{{Key: "n", Value: 1}}))
	if err != nil {
		t.Fatalf("indexed sort: %v", err)
	}
	var got []bson.M
	if err := cur.All(ctxT(t), &got); err != nil || len(got) != 105 || got[0]["n"] != int32(104) {
		t.Fatalf("indexed sort returned %d documents, first %v, %v", len(got), got[0], err)
	}
	agg, err := c.Aggregate(ctxT(t), mongo.Pipeline{{{Key: "$sort", Value: bson.D{{Key: "n", Value: 1}}}}, {{Key: "$project", Value: bson.D{{Key: "n", Value: 1}}}}})
	if err != nil {
		t.Fatalf("aggregate $sort on the index: %v", err)
	}
	_ = agg.Close(ctxT(t))
}

// mongosh's cursor.explain and the index helpers behave as on MongoDB.
func TestMongoshIndexesAndExplain(t *testing.T) {
	s := startServer(t, app.Config{})
	script := `
db.s.drop();
const docs = [];
for (let i = 0; i < 1000; i++) docs.push({_id: i, token: "t" + i, n: i % 10});
db.s.insertMany(docs);
print("created " + db.s.createIndex({token: 1}, {unique: true}));
print("indexes " + db.s.getIndexes().map(ix => ix.name).join(","));
const ex = db.s.find({token: "t500"}).explain("executionStats");
const wp = ex.queryPlanner.winningPlan;
print("plan " + wp.stage + ">" + wp.inputStage.stage + " " + wp.inputStage.indexName);
print("stats " + ex.executionStats.nReturned + " " + ex.executionStats.totalKeysExamined + " " + ex.executionStats.totalDocsExamined);
const qp = db.s.find({n: 3}).sort({token: -1}).limit(2).explain();
print("sorted " + qp.queryPlanner.winningPlan.stage + " " + (qp.executionStats === undefined));
const agg = db.s.explain("executionStats").aggregate([{$match: {token: "t7"}}, {$group: {_id: "$n"}}]);
print("agg " + agg.stages[0].$cursor.executionStats.totalKeysExamined);
print("count " + db.s.explain("executionStats").count({token: "t9"}).executionStats.executionStages.stage);
print("dropped " + db.s.dropIndex("token_1").ok);
print("validate " + db.s.validate({full: true}).valid);
`
	out, _ := mongosh(t, dbURI(s, "test"), "--eval", script)
	for _, want := range []string{
		"created token_1", "indexes _id_,token_1", "plan FETCH>IXSCAN token_1", "stats 1 1 1",
		"sorted LIMIT true", "agg 1", "count COUNT", "dropped 1", "validate true",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("mongosh output lacks %q:\n%s", want, out)
		}
	}
}

// find and aggregate run on one engine: every stage reports what it
// passed on, in find's shape (works, advanced, ...) and in aggregate's
// (nReturned, executionTimeMillisEstimate per stage).
func TestExplainCountsEveryStage(t *testing.T) {
	db := tokenDB(t, 100)
	find := bson.D{{Key: "find", Value: "s"}, {Key: "filter", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 5}}}}},
		{Key: "sort", Value: bson.D{{Key: "_id", Value: -1}, {Key: "n", Value: 1}}}, {Key: "skip", Value: 3}, {Key: "limit", Value: 4},
		{Key: "projection", Value: bson.D{{Key: "token", Value: 1}}}}
	ex := explainFind(t, db, find, "executionStats")
	if got := planStages(t, ex); got != "PROJECTION_SIMPLE>SKIP>SORT>FETCH>IXSCAN" {
		t.Fatalf("stages %s", got)
	}
	top := field(t, execStats(t, ex), "executionStages").(bson.D)
	for _, want := range []struct {
		stage          string
		returned, work int64
	}{{"PROJECTION_SIMPLE", 4, 5}, {"SKIP", 4, 8}, {"SORT", 7, 51}} {
		st := stageNamed(t, top, want.stage)
		if toInt64(field(t, st, "nReturned")) != want.returned || toInt64(field(t, st, "works")) != want.work || toInt64(field(t, st, "advanced")) != want.returned {
			t.Fatalf("%s: %v", want.stage, st)
		}
	}
	if toInt64(field(t, stageNamed(t, top, "SORT"), "totalDataSizeSorted")) <= 0 {
		t.Fatalf("SORT sorted nothing: %v", top)
	}
	agg := bson.D{{Key: "aggregate", Value: "s"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$lt", Value: 3}}}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$n"}, {Key: "c", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "c", Value: -1}}}},
		bson.D{{Key: "$limit", Value: 2}},
	}}, {Key: "cursor", Value: bson.D{}}}
	stages := field(t, explainFind(t, db, agg, "executionStats"), "stages").(bson.A)
	if len(stages) != 3 {
		t.Fatalf("stages %v", stages)
	}
	want := []struct {
		name     string
		returned int64
	}{{"$cursor", 30}, {"$group", 3}, {"$sort", 2}}
	for i, w := range want {
		st := stages[i].(bson.D)
		if st[0].Key != w.name || field(t, st, "nReturned") != w.returned {
			t.Fatalf("stage %d: %v, want %s returning %d", i, st, w.name, w.returned)
		}
		if _, ok := field(t, st, "executionTimeMillisEstimate").(int64); !ok {
			t.Fatalf("stage %d time: %v", i, st)
		}
	}
	sortSpec := field(t, stages[2].(bson.D), "$sort").(bson.D)
	if field(t, sortSpec, "limit") != int64(2) || fmt.Sprint(field(t, sortSpec, "sortKey")) != `{"c":{"$numberInt":"-1"}}` {
		t.Fatalf("$sort %v", sortSpec)
	}
}
