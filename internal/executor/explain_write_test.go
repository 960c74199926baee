package executor

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/query"
)

// TestExplainWriteCountsWhatWouldChange: each shape of explained write
// lays out its stages and counts, at executionStats, what it would match
// and change; at queryPlanner it counts nothing.
func TestExplainWriteCountsWhatWouldChange(t *testing.T) {
	store := newStore(t, person(1, "c"), person(2, "a"), person(3, "b"), person(4, "d"))
	sortSpec := bson.D{{Key: "name", Value: int32(-1)}}
	byNameDesc, err := query.NewSort(sortSpec)
	if err != nil {
		t.Fatal(err)
	}
	// renameToB would set name to "b": it changes every document but _id 3.
	var updated []int32
	renameToB := func(doc bson.D) (bool, error) {
		id, _ := bsonutil.Field(doc, "_id")
		updated = append(updated, id.(int32))
		name, _ := bsonutil.Field(doc, "name")
		return name != "b", nil
	}
	cases := []struct {
		name    string
		write   DryWrite
		stages  []string
		exec    bson.D
		updated []int32 // the documents the update was tried on
	}{
		{"update many", DryWrite{Stage: "UPDATE", Update: renameToB}, []string{"UPDATE", "COLLSCAN"},
			bson.D{{Key: "nMatched", Value: docstore.Num(4)}, {Key: "nWouldModify", Value: docstore.Num(3)}, {Key: "nWouldUpsert", Value: false}}, []int32{1, 2, 3, 4}},
		{"update one", DryWrite{Stage: "UPDATE", One: true, Update: renameToB}, []string{"UPDATE", "COLLSCAN"},
			bson.D{{Key: "nMatched", Value: docstore.Num(1)}, {Key: "nWouldModify", Value: docstore.Num(1)}, {Key: "nWouldUpsert", Value: false}}, []int32{1}},
		{"update one by a sort", DryWrite{Stage: "UPDATE", One: true, Sort: byNameDesc, SortSpec: sortSpec, Update: renameToB}, []string{"UPDATE", "SORT", "COLLSCAN"},
			bson.D{{Key: "nMatched", Value: docstore.Num(1)}, {Key: "nWouldModify", Value: docstore.Num(1)}, {Key: "nWouldUpsert", Value: false}}, []int32{4}},
		{"delete many", DryWrite{Stage: "DELETE"}, []string{"DELETE", "COLLSCAN"},
			bson.D{{Key: "nWouldDelete", Value: docstore.Num(4)}}, nil},
		{"delete one by a sort", DryWrite{Stage: "DELETE", One: true, Sort: byNameDesc, SortSpec: sortSpec}, []string{"DELETE", "SORT", "COLLSCAN"},
			bson.D{{Key: "nWouldDelete", Value: docstore.Num(1)}}, nil},
	}
	e := New(store, clock.Real{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []Verbosity{QueryPlannerOnly, ExecutionStats} {
				updated = nil
				p, err := e.PlanScan(newOp(), store.Collection("db", "c"), mustFilter(t, nil), docstore.Query{Filter: mustFilter(t, nil)})
				if err != nil {
					t.Fatal(err)
				}
				ex, err := p.ExplainWrite(tc.write, "db.c", v)
				if err != nil {
					t.Fatal(err)
				}
				if got := stageNames(ex); !slices.Equal(got, tc.stages) {
					t.Fatalf("stages %v, want %v", got, tc.stages)
				}
				top := p.stages[len(p.stages)-1]
				if v == QueryPlannerOnly {
					if top.Exec != nil || updated != nil {
						t.Fatalf("queryPlanner counted %v, tried %v", top.Exec, updated)
					}
					continue
				}
				if bsonutil.Compare(top.Exec, tc.exec) != 0 || !slices.Equal(updated, tc.updated) {
					t.Fatalf("counted %v after trying %v, want %v after %v", top.Exec, updated, tc.exec, tc.updated)
				}
			}
		})
	}
	if n := store.Collection("db", "c").Count(); n != 4 {
		t.Fatalf("an explain wrote: %d documents left", n)
	}
}
