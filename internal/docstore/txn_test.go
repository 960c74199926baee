package docstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// TestOverlayIteratorMatchesMerge compares the overlay iterator with the
// merge done the slow way (a map of the base with the write set applied),
// forward, backward, by seeks and with direction changes, over random
// bases and write sets in random bounds.
func TestOverlayIteratorMatchesMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		model := map[string]string{}
		b := eng.NewBatch()
		for range rng.IntN(12) {
			k := fmt.Sprintf("k%02d", rng.IntN(30))
			model[k] = "base" + k
			if err := b.Set([]byte(k), []byte(model[k])); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		ws := newWriteSet()
		for range rng.IntN(12) {
			k := fmt.Sprintf("k%02d", rng.IntN(30))
			if rng.IntN(3) == 0 {
				ws.put([]byte(k), wsOp{deleted: true})
				delete(model, k)
			} else {
				ws.put([]byte(k), wsOp{value: []byte("ws" + k)})
				model[k] = "ws" + k
			}
		}
		var lo, hi []byte
		if rng.IntN(2) == 0 {
			lo = []byte(fmt.Sprintf("k%02d", rng.IntN(15)))
		}
		if rng.IntN(2) == 0 {
			hi = []byte(fmt.Sprintf("k%02d", 15+rng.IntN(15)))
		}
		want := mergedKeys(model, lo, hi)
		it, err := overlay{base: eng, ws: ws}.NewIter(lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		checkOverlay(t, round, it, model, want, rng)
		_ = it.Close()
		_ = eng.Close()
	}
}

func mergedKeys(model map[string]string, lo, hi []byte) []string {
	var keys []string
	for k := range model {
		if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func collect(it storage.Iterator, ok bool, step func() bool) []string {
	var got []string
	for ; ok; ok = step() {
		got = append(got, string(it.Key()))
	}
	return got
}

func checkOverlay(t *testing.T, round int, it storage.Iterator, model map[string]string, want []string, rng *rand.Rand) {
	t.Helper()
	if got := collect(it, it.First(), it.Next); !slices.Equal(got, want) {
		t.Fatalf("round %d forward: %v, want %v", round, got, want)
	}
	rev := slices.Clone(want)
	slices.Reverse(rev)
	if got := collect(it, it.Last(), it.Prev); !slices.Equal(got, rev) {
		t.Fatalf("round %d backward: %v, want %v", round, got, rev)
	}
	for range 10 {
		seek := fmt.Sprintf("k%02d", rng.IntN(31))
		i, _ := slices.BinarySearch(want, seek)
		if got := collect(it, it.SeekGE([]byte(seek)), it.Next); !slices.Equal(got, want[i:]) {
			t.Fatalf("round %d SeekGE(%s): %v, want %v", round, seek, got, want[i:])
		}
		before := slices.Clone(want[:i])
		slices.Reverse(before)
		if got := collect(it, it.SeekLT([]byte(seek)), it.Prev); !slices.Equal(got, before) {
			t.Fatalf("round %d SeekLT(%s): %v, want %v", round, seek, got, before)
		}
		// A turn: one step forward from the seek, then back.
		if it.SeekGE([]byte(seek)) && it.Next() && it.Prev() {
			if string(it.Key()) != want[i] || string(it.Value()) != model[want[i]] {
				t.Fatalf("round %d turn at %s: %s=%s, want %s", round, seek, it.Key(), it.Value(), want[i])
			}
		}
	}
}

func openTxnStore(t *testing.T) (*Store, *Collection) {
	t.Helper()
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "c", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func setField(field string, v any) func(bson.D) (Change, error) {
	return func(doc bson.D) (Change, error) {
		if doc == nil {
			return Change{Kind: Keep}, nil
		}
		next := slices.Clone(doc)
		for i := range next {
			if next[i].Key == field {
				next[i].Value = v
				return Change{Kind: Replace, Doc: next}, nil
			}
		}
		return Change{Kind: Replace, Doc: append(next, bson.E{Key: field, Value: v})}, nil
	}
}

func removeDoc(doc bson.D) (Change, error) { return Change{Kind: Remove}, nil }

func txnScan(t *testing.T, x *Txn, c *Collection) []bson.D {
	t.Helper()
	return readIter(t, x.Scan(c, nil, nil))
}

// readIter reads it to its end and closes it.
func readIter(t *testing.T, it *DocIter) []bson.D {
	t.Helper()
	defer it.Close()
	var docs []bson.D
	for {
		d, ok, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return docs
		}
		docs = append(docs, d)
	}
}

func docIDs(docs []bson.D) []string {
	var out []string
	for _, d := range docs {
		id, _ := lookupID(d)
		out = append(out, fmt.Sprint(id))
	}
	return out
}

func TestTxnReadsItsSnapshotAndItsOwnWrites(t *testing.T) {
	s, c := openTxnStore(t)
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "a"}})
	insert(t, c, bson.D{{Key: "_id", Value: 2}, {Key: "v", Value: "a"}})
	x := s.BeginTxn()
	defer x.Abort()
	insert(t, c, bson.D{{Key: "_id", Value: 3}}) // after the snapshot
	if _, err := c.Modify(1, WriteOptions{}, setField("v", "outside")); err != nil {
		t.Fatal(err)
	}
	if err := x.Insert(c, bson.D{{Key: "_id", Value: 4}}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Modify(c, 2, removeDoc); err != nil {
		t.Fatal(err)
	}
	docs := txnScan(t, x, c)
	if got := docIDs(docs); !slices.Equal(got, []string{"1", "4"}) {
		t.Fatalf("inside: %v, want [1 4]", got)
	}
	if v, _ := bsonutil.Field(docs[0], "v"); v != "a" {
		t.Fatalf("inside, document 1 is %v: the snapshot's version is a", docs[0])
	}
	if n := visible(t, c); n != 3 || c.Count() != 3 {
		t.Fatalf("outside before commit: %d visible, count %d; want 3, 3", n, c.Count())
	}
}

func TestTxnCommitIsAtomicAndCounted(t *testing.T) {
	s, c := openTxnStore(t)
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "tags", Value: 1}}}, {Key: "name", Value: "tags_1"}})
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "tags", Value: "x"}})
	x := s.BeginTxn()
	for i := 2; i <= 4; i++ {
		if err := x.Insert(c, bson.D{{Key: "_id", Value: i}, {Key: "tags", Value: bson.A{"a", "b"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := x.Modify(c, 1, removeDoc); err != nil {
		t.Fatal(err)
	}
	if err := x.Commit(WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := visible(t, c); n != 3 || c.Count() != 3 {
		t.Fatalf("after commit: %d visible, count %d; want 3, 3", n, c.Count())
	}
	if !c.meta().Indexes[1].IsMultiKey() {
		t.Fatal("the array values the transaction wrote did not make tags_1 multikey")
	}
	mustValid(t, c)
	if err := x.Commit(WriteOptions{}); !errors.Is(err, ErrTxnDone) {
		t.Fatalf("second commit: %v, want ErrTxnDone", err)
	}
}

func TestTxnAbortLeavesNothing(t *testing.T) {
	s, c := openTxnStore(t)
	insert(t, c, bson.D{{Key: "_id", Value: 1}})
	x := s.BeginTxn()
	if err := x.Insert(c, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Modify(c, 1, removeDoc); err != nil {
		t.Fatal(err)
	}
	x.Abort()
	if n := visible(t, c); n != 1 || c.Count() != 1 {
		t.Fatalf("after abort: %d visible, count %d; want 1, 1", n, c.Count())
	}
	if err := x.Insert(c, bson.D{{Key: "_id", Value: 3}}); !errors.Is(err, ErrTxnDone) {
		t.Fatalf("a statement after abort: %v, want ErrTxnDone", err)
	}
	mustValid(t, c)
}

func TestTxnStatementFailureLeavesEarlierStatements(t *testing.T) {
	s, c := openTxnStore(t)
	x := s.BeginTxn()
	defer x.Abort()
	if err := x.Insert(c, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := x.Insert(c, bson.D{{Key: "_id", Value: 1}}); !hasCode(err, mongoerr.DuplicateKey) {
		t.Fatalf("second insert of _id 1: %v, want DuplicateKey", err)
	}
	if got := docIDs(txnScan(t, x, c)); !slices.Equal(got, []string{"1"}) {
		t.Fatalf("inside: %v, want [1]", got)
	}
}

// conflictCase is one pair of writes to the same key: first runs in a
// transaction or outside one and commits, second runs in a transaction
// begun before first committed. The second must get WriteConflict, at
// its statement when first committed before it, else at commit.
type conflictCase struct {
	name   string
	unique bool // the collection has a unique index on u
	first  func(x *Txn, c *Collection) error
	second func(x *Txn, c *Collection) error
}

func txnUpdate(id any) func(x *Txn, c *Collection) error {
	return func(x *Txn, c *Collection) error {
		if x == nil {
			_, err := c.Modify(id, WriteOptions{}, setField("v", "other"))
			return err
		}
		_, err := x.Modify(c, id, setField("v", fmt.Sprint("txn", x.start)))
		return err
	}
}

func txnSet(id any, field string, v any) func(x *Txn, c *Collection) error {
	return func(x *Txn, c *Collection) error {
		if x == nil {
			_, err := c.Modify(id, WriteOptions{}, setField(field, v))
			return err
		}
		_, err := x.Modify(c, id, setField(field, v))
		return err
	}
}

func txnDelete(id any) func(x *Txn, c *Collection) error {
	return func(x *Txn, c *Collection) error {
		if x == nil {
			_, err := c.Modify(id, WriteOptions{}, removeDoc)
			return err
		}
		_, err := x.Modify(c, id, removeDoc)
		return err
	}
}

func txnInsert(doc bson.D) func(x *Txn, c *Collection) error {
	return func(x *Txn, c *Collection) error {
		if x == nil {
			return c.Insert(doc, WriteOptions{})
		}
		return x.Insert(c, doc)
	}
}

func conflictCases() []conflictCase {
	return []conflictCase{
		{name: "update-update", first: txnUpdate(1), second: txnUpdate(1)},
		{name: "delete-update", first: txnDelete(1), second: txnUpdate(1)},
		{name: "update-delete", first: txnUpdate(1), second: txnDelete(1)},
		{name: "insert-insert same _id", first: txnInsert(bson.D{{Key: "_id", Value: 9}}), second: txnInsert(bson.D{{Key: "_id", Value: 9}})},
		{name: "unique insert-insert", unique: true,
			first:  txnInsert(bson.D{{Key: "_id", Value: 10}, {Key: "u", Value: 5}}),
			second: txnInsert(bson.D{{Key: "_id", Value: 11}, {Key: "u", Value: 5}})},
		{name: "unique update takes, insert takes", unique: true,
			first:  txnSet(1, "u", 7),
			second: txnInsert(bson.D{{Key: "_id", Value: 12}, {Key: "u", Value: 7}})},
		{name: "unique insert takes, update takes", unique: true,
			first:  txnInsert(bson.D{{Key: "_id", Value: 12}, {Key: "u", Value: 7}}),
			second: txnSet(1, "u", 7)},
	}
}

func conflictStore(t *testing.T, unique bool) (*Store, *Collection) {
	s, c := openTxnStore(t)
	if unique {
		mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "u_1"}, {Key: "unique", Value: true}})
	}
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "u", Value: 1}, {Key: "v", Value: "start"}})
	return s, c
}

func hasCode(err error, code mongoerr.Code) bool { return err != nil && mongoerr.As(err).Code == code }

func isWriteConflict(err error) bool { return hasCode(err, mongoerr.WriteConflict) }

func TestTxnConflicts(t *testing.T) {
	for _, tc := range conflictCases() {
		for _, firstInTxn := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/first in txn %v", tc.name, firstInTxn), func(t *testing.T) {
				s, c := conflictStore(t, tc.unique)
				second := s.BeginTxn()
				defer second.Abort()
				var first *Txn
				if firstInTxn {
					first = s.BeginTxn()
				}
				if err := tc.first(first, c); err != nil {
					t.Fatal(err)
				}
				if first != nil {
					if err := first.Commit(WriteOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				if err := tc.second(second, c); !isWriteConflict(err) {
					t.Fatalf("second's statement after first committed: %v, want WriteConflict", err)
				}
				mustValid(t, c)
			})
		}
		t.Run(tc.name+"/both open, the second writer conflicts at once", func(t *testing.T) {
			s, c := conflictStore(t, tc.unique)
			first, second := s.BeginTxn(), s.BeginTxn()
			defer second.Abort()
			if err := tc.first(first, c); err != nil {
				t.Fatal(err)
			}
			if err := tc.second(second, c); !isWriteConflict(err) {
				t.Fatalf("second's statement while first is open: %v, want WriteConflict", err)
			}
			if err := first.Commit(WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			mustValid(t, c)
		})
		t.Run(tc.name+"/first aborts, its keys are free", func(t *testing.T) {
			s, c := conflictStore(t, tc.unique)
			first := s.BeginTxn()
			if err := tc.first(first, c); err != nil {
				t.Fatal(err)
			}
			first.Abort()
			second := s.BeginTxn()
			if err := tc.second(second, c); err != nil {
				t.Fatalf("second's statement after first aborted: %v", err)
			}
			if err := second.Commit(WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			mustValid(t, c)
		})
	}
}

func TestTxnDisjointWritesBothCommit(t *testing.T) {
	s, c := conflictStore(t, true)
	insert(t, c, bson.D{{Key: "_id", Value: 2}, {Key: "u", Value: 2}})
	a, b := s.BeginTxn(), s.BeginTxn()
	if err := txnUpdate(1)(a, c); err != nil {
		t.Fatal(err)
	}
	if err := txnUpdate(2)(b, c); err != nil {
		t.Fatal(err)
	}
	if err := txnInsert(bson.D{{Key: "_id", Value: 3}, {Key: "u", Value: 3}})(b, c); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(WriteOptions{}); err != nil {
		t.Fatalf("disjoint commit: %v", err)
	}
	if n := visible(t, c); n != 3 {
		t.Fatalf("%d visible, want 3", n)
	}
	mustValid(t, c)
}

func TestTxnStampsGoWhenNoTxnIsOpen(t *testing.T) {
	s, c := openTxnStore(t)
	insert(t, c, bson.D{{Key: "_id", Value: 1}})
	x := s.BeginTxn()
	for i := 2; i < 10; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}})
	}
	if n := len(s.txns.stamps); n != 8 {
		t.Fatalf("%d stamps while a transaction is open, want 8", n)
	}
	x.Abort()
	insert(t, c, bson.D{{Key: "_id", Value: 10}})
	if n := len(s.txns.stamps); n != 0 {
		t.Fatalf("%d stamps with no transaction open, want 0", n)
	}
}

func TestTxnNeverReadsExpired(t *testing.T) {
	c, clk := ttlColl(t, "t", 0)
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "t", Value: date(t0.Add(10 * time.Second))}})
	insert(t, c, bson.D{{Key: "_id", Value: 2}, {Key: "t", Value: date(t0.Add(time.Hour))}})
	x := c.store.BeginTxn()
	defer x.Abort()
	if err := x.Insert(c, bson.D{{Key: "_id", Value: 3}, {Key: "t", Value: date(t0.Add(5 * time.Second))}}); err != nil {
		t.Fatal(err)
	}
	if got := docIDs(txnScan(t, x, c)); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("before expiry: %v", got)
	}
	clk.Set(t0.Add(11 * time.Second)) // 1 and the transaction's own 3 expired; the snapshot still holds 1
	if got := docIDs(txnScan(t, x, c)); !slices.Equal(got, []string{"2"}) {
		t.Fatalf("after expiry: %v, want [2]", got)
	}
	if cur, err := x.Modify(c, 1, setField("v", 1)); err != nil || cur != nil {
		t.Fatalf("update of an expired document: %v, %v; want nothing matched", cur, err)
	}
}

// TestTxnWriteThenTTLDeleteConflicts: a transaction updated a document,
// the monitor then deleted it (a replica set's compact expiry), and the
// commit is refused rather than writing the document back.
func TestTxnWriteThenTTLDeleteConflicts(t *testing.T) {
	c, _, clk := openCompactStore(t)
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: 1}, {Key: "t", Value: date(t0.Add(10 * time.Second))}})
	x := c.store.BeginTxn()
	defer x.Abort()
	if _, err := x.Modify(c, 1, setField("k", 2)); err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(11 * time.Second))
	res, err := c.BeginExpiry("t_1", clk.Now()).Next(100)
	if err != nil || res.Deleted != 1 {
		t.Fatalf("expiry pass: %+v, %v; want 1 deleted", res, err)
	}
	if err := x.Commit(WriteOptions{}); !isWriteConflict(err) {
		t.Fatalf("commit after the TTL deletion: %v, want WriteConflict", err)
	}
	if n := visible(t, c); n != 0 || c.Count() != 0 {
		t.Fatalf("%d visible, count %d; the deletion must stand", n, c.Count())
	}
	mustValid(t, c)
}

func TestTxnIndexBuiltMeanwhileConflicts(t *testing.T) {
	s, c := openTxnStore(t)
	x := s.BeginTxn()
	defer x.Abort()
	if err := x.Insert(c, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}})
	if err := x.Commit(WriteOptions{}); !isWriteConflict(err) {
		t.Fatalf("commit over a new index: %v, want WriteConflict", err)
	}
	mustValid(t, c)
}

func TestWriteSetReplaysInKeyOrder(t *testing.T) {
	ws := newWriteSet()
	for _, k := range []string{"c", "a", "b", "a"} {
		ws.put([]byte(k), wsOp{value: []byte(k)})
	}
	got := make([]string, 0, len(ws.keys))
	for _, k := range ws.keys {
		got = append(got, string(k))
	}
	if !slices.IsSortedFunc(ws.keys, bytes.Compare) || len(got) != 3 {
		t.Fatalf("keys %v, want [a b c]", got)
	}
}

// TestWriteOptionsTxnRoutesEveryEntryPoint: each write entry point the
// command layer calls, given WriteOptions.Txn, writes into the
// transaction and nothing into storage until commit.
func TestWriteOptionsTxnRoutesEveryEntryPoint(t *testing.T) {
	s, c := openTxnStore(t)
	insert(t, c, bson.D{{Key: "_id", Value: 1}})
	insert(t, c, bson.D{{Key: "_id", Value: 2}})
	x := s.BeginTxn()
	opt := WriteOptions{Txn: x}
	steps := map[string]func() error{
		"Insert": func() error { return c.Insert(bson.D{{Key: "_id", Value: 3}}, opt) },
		"InsertGroup": func() error {
			errs, n := c.InsertGroup([]GroupDoc{{Doc: bson.D{{Key: "_id", Value: 4}}, Opt: opt}, {Doc: bson.D{{Key: "_id", Value: 5}}, Opt: opt}}, true)
			return errors.Join(append(errs, nil)[:n]...)
		},
		"Modify": func() error { _, err := c.Modify(1, opt, setField("v", "txn")); return err },
		"ModifyGroup": func() error {
			_, err := c.ModifyGroup([]any{2, 6}, opt, func(i int, doc bson.D) (Change, error) {
				if doc == nil {
					return Change{Kind: Insert, Doc: bson.D{{Key: "_id", Value: 6}}}, nil
				}
				return Change{Kind: Remove}, nil
			})
			return err
		},
	}
	for name, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if n := visible(t, c); n != 2 {
		t.Fatalf("outside before commit: %d visible, want 2", n)
	}
	inside := readIter(t, c.Scan(nil, nil).Within(x))
	if got := docIDs(inside); !slices.Equal(got, []string{"1", "3", "4", "5", "6"}) {
		t.Fatalf("inside: %v, want [1 3 4 5 6]", got)
	}
	if err := x.Commit(WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := visible(t, c); n != 5 || c.Count() != 5 {
		t.Fatalf("after commit: %d visible, count %d; want 5, 5", n, c.Count())
	}
	mustValid(t, c)
}
