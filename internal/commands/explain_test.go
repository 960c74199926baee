package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// doc returns the sub-document at key, failing the test when absent.
func doc(t *testing.T, d bson.D, key string) bson.D {
	t.Helper()
	v, ok := bsonutil.Field(d, key)
	sub, isDoc := v.(bson.D)
	if !ok || !isDoc {
		t.Fatalf("no document %s in %v", key, d)
	}
	return sub
}

func num(t *testing.T, d bson.D, key string) int64 {
	t.Helper()
	v, _ := bsonutil.Field(d, key)
	switch n := v.(type) {
	case int32:
		return int64(n)
	case int64:
		return n
	}
	t.Fatalf("no number %s in %v", key, d)
	return 0
}

func TestExplainFindStagesCountWhatTheyPass(t *testing.T) {
	h, _ := newTestHandler(t)
	seedHandler(t, h)
	find := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 1}}}}},
		{Key: "sort", Value: bson.D{{Key: "name", Value: 1}}}, {Key: "skip", Value: 1}, {Key: "limit", Value: 1},
		{Key: "projection", Value: bson.D{{Key: "name", Value: int32(1)}}}}
	out := mustCall(t, h, "test", bson.D{{Key: "explain", Value: find}, {Key: "verbosity", Value: "executionStats"}})
	stats := doc(t, out, "executionStats")
	if num(t, stats, "nReturned") != 1 || num(t, stats, "totalDocsExamined") != 3 {
		t.Fatalf("executionStats %v", stats)
	}
	// PROJECTION_SIMPLE > SKIP > SORT (top-2) > COLLSCAN, each with its own counters.
	want := []struct {
		stage         string
		returned, wks int64
	}{{"PROJECTION_SIMPLE", 1, 2}, {"SKIP", 1, 3}, {"SORT", 2, 4}, {"COLLSCAN", 3, 4}}
	st := doc(t, stats, "executionStages")
	for _, w := range want {
		if name, _ := bsonutil.Field(st, "stage"); name != w.stage || num(t, st, "nReturned") != w.returned || num(t, st, "works") != w.wks {
			t.Fatalf("stage %v, want %+v", st, w)
		}
		if w.stage == "SORT" && (num(t, st, "limitAmount") != 2 || num(t, st, "totalDataSizeSorted") <= 0) {
			t.Fatalf("SORT %v", st)
		}
		if w.stage != "COLLSCAN" {
			st = doc(t, st, "inputStage")
		}
	}
	// queryPlanner alone runs nothing: the stages carry no counters.
	out = mustCall(t, h, "test", bson.D{{Key: "explain", Value: find}, {Key: "verbosity", Value: "queryPlanner"}})
	plan := doc(t, doc(t, out, "queryPlanner"), "winningPlan")
	if _, ok := bsonutil.Field(plan, "nReturned"); ok || num(t, doc(t, plan, "inputStage"), "skipAmount") != 1 {
		t.Fatalf("winningPlan %v", plan)
	}
}

func TestExplainAggregateStagesHaveCounters(t *testing.T) {
	h, _ := newTestHandler(t)
	seedHandler(t, h)
	agg := bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 1}}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "n", Value: -1}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "c", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
	}}, {Key: "cursor", Value: bson.D{}}}
	out := mustCall(t, h, "test", bson.D{{Key: "explain", Value: agg}, {Key: "verbosity", Value: "executionStats"}})
	v, _ := bsonutil.Field(out, "stages")
	stages, _ := v.(bson.A)
	if len(stages) != 3 {
		t.Fatalf("stages %v", out)
	}
	cur := stages[0].(bson.D)
	if cur[0].Key != "$cursor" || num(t, cur, "nReturned") != 2 {
		t.Fatalf("$cursor %v", cur)
	}
	sortSt, group := stages[1].(bson.D), stages[2].(bson.D)
	if sortSt[0].Key != "$sort" || num(t, sortSt, "nReturned") != 2 || num(t, sortSt, "totalDataSizeSortedBytesEstimate") <= 0 {
		t.Fatalf("$sort %v", sortSt)
	}
	if group[0].Key != "$group" || num(t, group, "nReturned") != 1 {
		t.Fatalf("$group %v", group)
	}
	// A $limit after a $sort is shown inside it, as mongod shows it.
	topTwo := bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$sort", Value: bson.D{{Key: "n", Value: -1}}}},
		bson.D{{Key: "$limit", Value: int32(2)}},
		bson.D{{Key: "$skip", Value: int32(1)}},
	}}, {Key: "cursor", Value: bson.D{}}}
	out = mustCall(t, h, "test", bson.D{{Key: "explain", Value: topTwo}, {Key: "verbosity", Value: "executionStats"}})
	v, _ = bsonutil.Field(out, "stages")
	stages, _ = v.(bson.A)
	if len(stages) != 3 {
		t.Fatalf("stages %v", stages)
	}
	fused := doc(t, stages[1].(bson.D), "$sort")
	if num(t, fused, "limit") != 2 || num(t, stages[1].(bson.D), "nReturned") != 2 {
		t.Fatalf("$sort with its limit %v", stages[1])
	}
	if skip := stages[2].(bson.D); skip[0].Key != "$skip" || skip[0].Value != int64(1) || num(t, skip, "nReturned") != 1 {
		t.Fatalf("$skip %v", skip)
	}
	// The explain option is queryPlanner: stages without counters.
	withOpt := append(append(bson.D{}, agg[:2]...), bson.E{Key: "explain", Value: true})
	out = mustCall(t, h, "test", withOpt)
	v, _ = bsonutil.Field(out, "stages")
	if st := v.(bson.A)[1].(bson.D); len(st) != 1 || st[0].Key != "$sort" || len(doc(t, st[0].Value.(bson.D), "sortKey")) != 1 {
		t.Fatalf("planned $sort %v", st)
	}
}
