package docstore

import (
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage"
)

// groupDocs makes one GroupDoc per _id, each counting its Extra's calls.
func groupDocs(t *testing.T, extras *int, ids ...any) []GroupDoc {
	t.Helper()
	var out []GroupDoc
	for i, id := range ids {
		d, err := PrepareInsert(bson.D{{Key: "_id", Value: id}, {Key: "k", Value: i}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, GroupDoc{Doc: d, Opt: WriteOptions{Extra: func(storage.Batch) error { *extras++; return nil }}})
	}
	return out
}

func wantCodes(t *testing.T, errs []error, want map[int]mongoerr.Code) {
	t.Helper()
	for i, err := range errs {
		code, ok := want[i]
		var me *mongoerr.Error
		switch {
		case !ok && err != nil:
			t.Errorf("document %d: %v, want inserted", i, err)
		case ok && (!errors.As(err, &me) || me.Code != code):
			t.Errorf("document %d: %v, want code %d", i, err, code)
		}
	}
}

// TestInsertGroupResults: a run of documents commits together, and a
// document that fails (its _id stored already, or twice in the run) fails
// alone, in its place, as Insert one by one would.
func TestInsertGroupResults(t *testing.T) {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "g", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	insertSynced(t, c, bson.D{{Key: "_id", Value: 5}})
	extras := 0
	docs := groupDocs(t, &extras, 1, 2, 5, 3, 2, 4)
	errs, attempted := c.InsertGroup(docs, false)
	if attempted != len(docs) {
		t.Fatalf("attempted %d of %d unordered", attempted, len(docs))
	}
	wantCodes(t, errs, map[int]mongoerr.Code{2: mongoerr.DuplicateKey, 4: mongoerr.DuplicateKey})
	if n := c.Count(); n != 5 {
		t.Fatalf("count %d, want 5", n)
	}
	if extras != 4 {
		t.Fatalf("%d statements' records written, want one per inserted document (4)", extras)
	}

	// The same _id twice in one run: the second sees the first.
	errs, attempted = c.InsertGroup(groupDocs(t, &extras, 20, 21, 20, 22), false)
	wantCodes(t, errs[:attempted], map[int]mongoerr.Code{2: mongoerr.DuplicateKey})
	if n := c.Count(); n != 8 {
		t.Fatalf("count %d, want 8", n)
	}

	errs, attempted = c.InsertGroup(groupDocs(t, &extras, 10, 11, 1, 12), true)
	if attempted != 3 {
		t.Fatalf("ordered: attempted %d, want 3 (stopped at the duplicate)", attempted)
	}
	wantCodes(t, errs[:attempted], map[int]mongoerr.Code{2: mongoerr.DuplicateKey})
	if n := c.Count(); n != 10 {
		t.Fatalf("count %d, want 10", n)
	}
}

// TestInsertGroupManyRuns: more documents than one run holds all go in,
// in runs that each commit once.
func TestInsertGroupManyRuns(t *testing.T) {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "many", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	extras := 0
	var ids []any
	for i := range 3*InsertGroupDocs + 7 {
		ids = append(ids, i)
	}
	errs, attempted := c.InsertGroup(groupDocs(t, &extras, ids...), true)
	if attempted != len(ids) {
		t.Fatalf("attempted %d of %d", attempted, len(ids))
	}
	wantCodes(t, errs, nil)
	if n := c.Count(); n != int64(len(ids)) {
		t.Fatalf("count %d, want %d", n, len(ids))
	}
}

// TestInsertGroupUniqueIndex: where a unique secondary index must see
// each insert's entries, two documents of one command with the same key
// do not both go in.
func TestInsertGroupUniqueIndex(t *testing.T) {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "u", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}, {Key: "unique", Value: true}})
	var docs []GroupDoc
	for i, k := range []int{1, 2, 1, 3} {
		docs = append(docs, GroupDoc{Doc: bson.D{{Key: "_id", Value: i}, {Key: "k", Value: k}}})
	}
	errs, _ := c.InsertGroup(docs, false)
	wantCodes(t, errs, map[int]mongoerr.Code{2: mongoerr.DuplicateKey})
	if n := c.Count(); n != 3 {
		t.Fatalf("count %d, want 3", n)
	}
}

// TestRemoveGroup: the matching documents of more than one run go, and a
// filter that fails on a document stops the removal there, the documents
// before it removed, those after it kept.
func TestRemoveGroup(t *testing.T) {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "rm", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []any
	for i := range 2*InsertGroupDocs + 10 {
		insertSynced(t, c, bson.D{{Key: "_id", Value: i}, {Key: "odd", Value: i%2 == 1}})
		ids = append(ids, i)
	}
	odd := func(doc bson.D) (bool, error) { return doc[1].Value.(bool), nil }
	n, err := c.RemoveGroup(ids, WriteOptions{}, odd)
	if err != nil || n != int64(InsertGroupDocs+5) {
		t.Fatalf("removed %d (%v), want %d", n, err, InsertGroupDocs+5)
	}
	if got := c.Count(); got != int64(InsertGroupDocs+5) {
		t.Fatalf("count %d after removing the odd ones, want %d", got, InsertGroupDocs+5)
	}
	failAt := 2*InsertGroupDocs - 4 // an even _id in the second run
	boom := errors.New("filter failed")
	n, err = c.RemoveGroup(ids, WriteOptions{}, func(doc bson.D) (bool, error) {
		if doc[0].Value.(int32) == int32(failAt) {
			return false, boom
		}
		return true, nil
	})
	if !errors.Is(err, boom) || n != int64(failAt/2) {
		t.Fatalf("removed %d (%v), want %d and the filter's error", n, err, failAt/2)
	}
	if got := c.Count(); got != int64(InsertGroupDocs+5-failAt/2) {
		t.Fatalf("count %d, want %d: the documents after the failure kept", got, InsertGroupDocs+5-failAt/2)
	}
}

// modifyN inserts n documents {_id: i, n: i, pad} to c and returns their
// _ids.
func modifyN(t *testing.T, c *Collection, n, pad int) []any {
	t.Helper()
	var ids []any
	for i := range n {
		insertSynced(t, c, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: i}, {Key: "pad", Value: string(make([]byte, pad))}})
		ids = append(ids, i)
	}
	return ids
}

// addN is a ModifyGroup callback that adds add to n, but for every third
// document (by index), which it keeps; it fails on the document failAt
// (-1: none).
func addN(add, failAt int, boom error) func(i int, doc bson.D) (Change, error) {
	return func(i int, doc bson.D) (Change, error) {
		n := int(doc[1].Value.(int32))
		switch {
		case i%3 == 0:
			return Change{}, nil
		case i == failAt:
			return Change{}, boom
		}
		next := append(bson.D{}, doc...)
		next[1].Value = int32(n + add)
		return Change{Kind: Replace, Doc: next}, nil
	}
}

// wantN checks the n of each document: i plus add for those of the
// changed range [from, to) that addN changes.
func wantN(t *testing.T, c *Collection, ids []any, add, from, to int) {
	t.Helper()
	for i, id := range ids {
		doc, err := c.Modify(id, WriteOptions{}, func(bson.D) (Change, error) { return Change{}, nil })
		if err != nil || doc == nil {
			t.Fatalf("document %d: %v", i, err)
		}
		want := i
		if i%3 != 0 && i >= from && i < to {
			want += add
		}
		if got := int(doc[1].Value.(int32)); got != want {
			t.Fatalf("document %d: n %d, want %d", i, got, want)
		}
	}
}

// TestModifyGroup: the changes of a multi-document update commit a run
// of documents to a batch, and a change that fails stops the update
// there, the documents before it changed, those after it kept.
func TestModifyGroup(t *testing.T) {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "up", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ids := modifyN(t, c, 2*InsertGroupDocs+10, 0)
	batches := 0
	opt := WriteOptions{Extra: func(storage.Batch) error { batches++; return nil }}
	done, err := c.ModifyGroup(ids, opt, addN(1000, -1, nil))
	if err != nil || done != len(ids) || batches != 3 {
		t.Fatalf("done %d of %d in %d batches (%v), want all in 3", done, len(ids), batches, err)
	}
	wantN(t, c, ids, 1000, 0, len(ids))
	boom := errors.New("update failed")
	failAt := InsertGroupDocs + 7
	done, err = c.ModifyGroup(ids, WriteOptions{}, addN(-1000, failAt, boom))
	if !errors.Is(err, boom) || done != failAt {
		t.Fatalf("done %d (%v), want %d and the update's error", done, err, failAt)
	}
	wantN(t, c, ids, 1000, failAt, len(ids))
}

// TestModifyGroupLargeDocuments: a run ends when its batch holds about
// insertGroupBytes, and the next run goes on from there.
func TestModifyGroupLargeDocuments(t *testing.T) {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "big", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ids := modifyN(t, c, 30, 100<<10)
	batches := 0
	opt := WriteOptions{Extra: func(storage.Batch) error { batches++; return nil }}
	done, err := c.ModifyGroup(ids, opt, addN(7, -1, nil))
	if err != nil || done != len(ids) || batches < 5 || batches > 15 {
		t.Fatalf("done %d of %d in %d batches (%v), want all in 5 to 15", done, len(ids), batches, err)
	}
	wantN(t, c, ids, 7, 0, len(ids))
}

// TestModifyGroupUniqueIndex: where a unique secondary index must see
// each change's entries, two documents updated to one key do not both
// change.
func TestModifyGroupUniqueIndex(t *testing.T) {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "u", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}, {Key: "unique", Value: true}})
	var ids []any
	for i := range 4 {
		insertSynced(t, c, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}})
		ids = append(ids, i)
	}
	done, err := c.ModifyGroup(ids, WriteOptions{}, func(i int, doc bson.D) (Change, error) {
		return Change{Kind: Replace, Doc: bson.D{doc[0], {Key: "k", Value: "same"}}}, nil
	})
	var me *mongoerr.Error
	if !errors.As(err, &me) || me.Code != mongoerr.DuplicateKey || done != 1 {
		t.Fatalf("done %d (%v), want 1 and a duplicate key", done, err)
	}
}

// TestModifyGroupInserts: an Insert change inserts where no document
// lives, in the run's batch; over a live document it is a duplicate key,
// and a document whose _id is not the run's is refused.
func TestModifyGroupInserts(t *testing.T) {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "ins", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	insertSynced(t, c, bson.D{{Key: "_id", Value: 2}})
	ids := []any{0, 1, 2}
	insert := func(i int, cur bson.D) (Change, error) {
		return Change{Kind: Insert, Doc: bson.D{{Key: "_id", Value: ids[i]}}}, nil
	}
	done, err := c.ModifyGroup(ids, WriteOptions{}, insert)
	var me *mongoerr.Error
	if done != 2 || !errors.As(err, &me) || me.Code != mongoerr.DuplicateKey {
		t.Fatalf("done %d (%v), want 2 and a duplicate key on the live document", done, err)
	}
	if n := c.Count(); n != 3 {
		t.Fatalf("count %d, want 3", n)
	}
	done, err = c.ModifyGroup([]any{7}, WriteOptions{}, func(int, bson.D) (Change, error) {
		return Change{Kind: Insert, Doc: bson.D{{Key: "_id", Value: 8}}}, nil
	})
	if done != 0 || err == nil || c.Count() != 3 {
		t.Fatalf("an insert under another _id: done %d (%v), count %d", done, err, c.Count())
	}
}

// TestModifyEachWritesOnlyCommittedExtras: each document's extra writes
// (a retryable statement's record) commit with its own change and with
// no other: a run cut by the batch's size writes the extras of the
// documents it holds, and a document that fails writes none.
func TestModifyEachWritesOnlyCommittedExtras(t *testing.T) {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "each", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ids := modifyN(t, c, 30, 100<<10)
	marker := func(i int) []byte { return fmt.Appendf(nil, "\xfemarker/%02d", i) }
	extras := make([]func(storage.Batch) error, len(ids))
	for i := range extras {
		extras[i] = func(b storage.Batch) error { return b.Set(marker(i), []byte{1}) }
	}
	boom := errors.New("boom")
	done, err := c.ModifyEach(ids, WriteOptions{}, extras, addN(7, 20, boom))
	if !errors.Is(err, boom) || done != 20 {
		t.Fatalf("done %d (%v), want 20 and the failure", done, err)
	}
	wantN(t, c, ids, 7, 0, 20)
	for i := range ids {
		_, err := s.Engine().Get(marker(i))
		if written := err == nil; written != (i < 20) {
			t.Fatalf("document %d's extra written %v (%v), want %v", i, written, err, i < 20)
		}
	}
}
