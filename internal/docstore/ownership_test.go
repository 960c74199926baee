package docstore

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/query"
)

// TestOwnershipFilterHidesOrphansFromEveryScan: under WithOwnership, each
// kind of scan a command opens (collection scan, point read, index scan)
// yields only owned documents; without it, all of them. The _id walk of
// CandidateIDs yields every candidate, orphans too: the write that takes
// them checks ownership on the document it reads (writeops's
// TestOrphansAreNeverWritten).
func TestOwnershipFilterHidesOrphansFromEveryScan(t *testing.T) {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "c", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "tok", Value: 1}}}, {Key: "name", Value: "tok_1"}})
	const docs = 40
	for i := range docs {
		insert(t, c, bson.D{{Key: "_id", Value: int32(i)}, {Key: "tok", Value: "a"}})
	}
	evenOwned := func(doc bson.D) bool { return doc[0].Value.(int32)%2 == 0 }
	owned := WithOwnership(context.Background(), evenOwned)
	filters := map[string]bson.D{
		"collection scan": nil,
		"point read":      {{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{int32(1), int32(2), int32(3), int32(4)}}}}},
		"index scan":      {{Key: "tok", Value: "a"}, {Key: "_id", Value: bson.D{{Key: "$gte", Value: int32(0)}}}},
	}
	wantOwned := map[string]int{"collection scan": docs / 2, "point read": 2, "index scan": docs / 2}
	wantAll := map[string]int{"collection scan": docs, "point read": 4, "index scan": docs}
	for name, q := range filters {
		f, err := query.NewFilter(q)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := c.PlanQuery(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := drain(t, c.Scan(plan, f).WithContext(owned), evenOwned); got != wantOwned[name] {
			t.Errorf("%s under the filter: %d documents, want %d", name, got, wantOwned[name])
		}
		if got := drain(t, c.Scan(plan, f).WithContext(context.Background()), nil); got != wantAll[name] {
			t.Errorf("%s without the filter: %d documents, want %d", name, got, wantAll[name])
		}
	}
	f, err := query.NewFilter(bson.D{{Key: "tok", Value: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := c.PlanQuery(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	it, ok := c.CandidateIDs(plan, f)
	if !ok {
		t.Fatal("an exact index plan gives candidates")
	}
	defer it.Close()
	n := 0
	for it = it.WithContext(owned); ; n++ {
		id, more, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
		if int64(bsonutil.ToFloat(id)) != int64(n) { // keyenc gives numbers back as one type
			t.Fatalf("candidate %d is %v", n, id)
		}
	}
	if n != docs {
		t.Errorf("%d candidates under the filter, want all %d", n, docs)
	}
}

// drain counts what it yields, checking each against owns when given.
func drain(t *testing.T, it *DocIter, owns func(bson.D) bool) int {
	t.Helper()
	defer it.Close()
	n := 0
	for {
		doc, ok, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return n
		}
		if owns != nil && !owns(doc) {
			t.Fatalf("%v yielded under the ownership filter", doc)
		}
		n++
	}
}
