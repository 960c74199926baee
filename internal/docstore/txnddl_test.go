package docstore

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

var specX = bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: "x_1"}}

// TestTxnCreatedCollectionIsItsOwnUntilCommit: the collection, its index,
// its document and its events appear to others at the commit, all at
// once, and survive a reopen with its count and the ID counter past it.
func TestTxnCreatedCollectionIsItsOwnUntilCommit(t *testing.T) {
	s, events := loggedStore(t)
	x := s.BeginTxn()
	c, created, err := x.GetOrCreate("db", "n")
	if err != nil || !created {
		t.Fatalf("GetOrCreate: %v, created %v", err, created)
	}
	if _, err := x.CreateIndexes(c, parseSpecs(t, specX)); err != nil {
		t.Fatal(err)
	}
	if err := x.Insert(c, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 5}}); err != nil {
		t.Fatal(err)
	}
	if s.Collection("db", "n") != nil || slices.Contains(s.CollectionNames("db"), "n") || x.Collection("db", "n") != c {
		t.Fatal("the created collection is seen outside its transaction, or not inside it")
	}
	if got := docIDs(txnScan(t, x, c)); !slices.Equal(got, []string{"1"}) {
		t.Fatalf("the transaction reads %v, want [1]", got)
	}
	if evs := events(); len(evs) != 0 {
		t.Fatalf("events before the commit: %v", evs)
	}
	if err := x.Commit(WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if s.Collection("db", "n") != c || c.Count() != 1 || len(c.Indexes()) != 2 || !c.Indexes()[1].Ready {
		t.Fatalf("after the commit: listed %v, count %d, indexes %v", s.Collection("db", "n") == c, c.Count(), c.Indexes())
	}
	wantOps(t, events(), changestream.OpCreate, changestream.OpCreateIndexes, changestream.OpInsert)

	again, err := Open(s.Engine(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	re := again.Collection("db", "n")
	if re == nil || re.Count() != 1 || len(re.Indexes()) != 2 {
		t.Fatalf("after a reopen: %v", re)
	}
	next, err := again.CreateCollection("db", "m", CreateOptions{})
	if err != nil || next.Meta().ID <= c.Meta().ID {
		t.Fatalf("a collection created after the reopen: %v, ID %d after %d", err, next.Meta().ID, c.Meta().ID)
	}
}

func wantOps(t *testing.T, evs []changestream.Record, ops ...changestream.Op) {
	t.Helper()
	var got []changestream.Op
	for _, r := range evs {
		got = append(got, r.Event.Op)
	}
	if !slices.Equal(got, ops) {
		t.Fatalf("events %v, want %v", got, ops)
	}
}

// TestTxnCreatedCollectionGoneWithAbort: nothing of it stays, and its name
// is free.
func TestTxnCreatedCollectionGoneWithAbort(t *testing.T) {
	s, events := loggedStore(t)
	x := s.BeginTxn()
	c, err := x.CreateCollection("db", "n", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Insert(c, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	x.Abort()
	if s.Collection("db", "n") != nil || len(events()) != 0 {
		t.Fatal("the aborted creation left its collection or events")
	}
	fresh, err := s.CreateCollection("db", "n", CreateOptions{})
	if err != nil || fresh.Meta().ID == c.Meta().ID || len(readIter(t, fresh.Scan(nil, nil))) != 0 {
		t.Fatalf("a create after the abort: %v", err)
	}
}

// TestTxnCreateConflicts: a namespace someone else created while the
// transaction held its own creation fails the commit with WriteConflict,
// whoever it was and whenever they did it; theirs stays.
func TestTxnCreateConflicts(t *testing.T) {
	outside := func(s *Store) error {
		_, err := s.CreateCollection("db", "n", CreateOptions{})
		return err
	}
	otherTxn := func(s *Store) error {
		y := s.BeginTxn()
		if _, _, err := y.GetOrCreate("db", "n"); err != nil {
			return err
		}
		return y.Commit(WriteOptions{})
	}
	cases := []struct {
		name   string
		other  func(*Store) error
		before bool // before the transaction's own creation (after its snapshot)
	}{
		{"a create after the statement", outside, false},
		{"a create before the statement", outside, true},
		{"another transaction's commit", otherTxn, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openStore(t)
			x := s.BeginTxn()
			if tc.before {
				if err := tc.other(s); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := x.CreateCollection("db", "n", CreateOptions{}); err != nil {
				t.Fatalf("create of a collection the snapshot does not hold: %v", err)
			}
			if !tc.before {
				if err := tc.other(s); err != nil {
					t.Fatal(err)
				}
			}
			theirs := s.Collection("db", "n")
			if err := x.Commit(WriteOptions{}); !isWriteConflict(err) {
				t.Fatalf("commit: %v, want WriteConflict", err)
			}
			if s.Collection("db", "n") != theirs {
				t.Fatal("the failed commit replaced the other's collection")
			}
		})
	}
}

// TestTxnCreateIndexesRules: new indexes only on a collection the
// transaction created and left empty; indexes that exist are fine
// anywhere; the refusals carry mongod's codes.
func TestTxnCreateIndexesRules(t *testing.T) {
	cases := []struct {
		name       string
		setup      func(t *testing.T, s *Store, x *Txn) *Collection
		code       mongoerr.Code // 0: accepted
		allExisted bool
	}{
		{"new index on a created empty collection", func(t *testing.T, s *Store, x *Txn) *Collection {
			c, _ := x.CreateCollection("db", "n", CreateOptions{})
			return c
		}, 0, false},
		{"new index on a created collection emptied again", func(t *testing.T, s *Store, x *Txn) *Collection {
			c, _ := x.CreateCollection("db", "n", CreateOptions{})
			mustTxn(t, x.Insert(c, bson.D{{Key: "_id", Value: 1}}))
			_, err := x.Modify(c, 1, removeDoc)
			mustTxn(t, err)
			return c
		}, 0, false},
		{"new index on a created collection with a document", func(t *testing.T, s *Store, x *Txn) *Collection {
			c, _ := x.CreateCollection("db", "n", CreateOptions{})
			mustTxn(t, x.Insert(c, bson.D{{Key: "_id", Value: 1}}))
			return c
		}, mongoerr.OperationNotSupportedInTransaction, false},
		{"new index on an existing collection", func(t *testing.T, s *Store, x *Txn) *Collection {
			return s.Collection("db", "c")
		}, mongoerr.OperationNotSupportedInTransaction, false},
		{"existing index on an existing collection", func(t *testing.T, s *Store, x *Txn) *Collection {
			c := s.Collection("db", "c")
			mustIndex(t, c, specX)
			return c
		}, 0, true},
		{"conflicting index on an existing collection", func(t *testing.T, s *Store, x *Txn) *Collection {
			c := s.Collection("db", "c")
			mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: -1}}}, {Key: "name", Value: "x_1"}})
			return c
		}, mongoerr.IndexKeySpecsConflict, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openTxnStore(t)
			x := s.BeginTxn()
			defer x.Abort()
			c := tc.setup(t, s, x)
			before := len(c.Indexes())
			res, err := x.CreateIndexes(c, parseSpecs(t, specX))
			if tc.code != 0 {
				if !hasCode(err, tc.code) {
					t.Fatalf("error %v, want code %d", err, tc.code)
				}
				if len(c.Indexes()) != before {
					t.Fatal("a refused createIndexes changed the indexes")
				}
				return
			}
			if err != nil || res.AllExisted != tc.allExisted || res.Before != before || res.After != len(c.Indexes()) {
				t.Fatalf("result %+v, %v", res, err)
			}
			// A document written after the index is found through it.
			if !tc.allExisted {
				mustTxn(t, x.Insert(c, bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: 1}}))
				mustTxn(t, x.Commit(WriteOptions{}))
				if c.Count() != 1 || !c.Indexes()[before].Ready {
					t.Fatalf("after the commit: count %d, indexes %v", c.Count(), c.Indexes())
				}
			}
		})
	}
}

func mustTxn(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestTxnCreateOfExistingCollection: create refuses what the snapshot or
// the transaction itself holds.
func TestTxnCreateOfExistingCollection(t *testing.T) {
	s, _ := openTxnStore(t)
	x := s.BeginTxn()
	defer x.Abort()
	if _, err := x.CreateCollection("db", "c", CreateOptions{}); !hasCode(err, mongoerr.NamespaceExists) {
		t.Fatalf("create of a collection in the snapshot: %v", err)
	}
	if _, err := x.CreateCollection("db", "n", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.CreateCollection("db", "n", CreateOptions{}); !hasCode(err, mongoerr.NamespaceExists) {
		t.Fatalf("create of a collection the transaction created: %v", err)
	}
}
