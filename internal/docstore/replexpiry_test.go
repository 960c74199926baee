package docstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// compactEngine stands for a replica set's engine: its batches carry
// expiries as TTL entry keys, and their commit deletes the documents
// from the deletion records in storage, as every member does at apply.
// With hold set, a batch's expiries wait in held until applyHeld, as an
// entry waits in the log behind others, while the proposer is told they
// were applied. With gate set, an expiry batch proposed asynchronously
// applies once gate closes, and the proposer waits for that.
type compactEngine struct {
	storage.Engine
	store  *Store
	hold   bool
	held   [][]byte
	gate   chan struct{}
	mu     sync.Mutex
	events int
	// applied keeps the events the applies returned, and compacted
	// counts the compact expiries applied.
	applied   [][]byte
	compacted int
	// commits lists the batches in the order they reached storage:
	// "write" or "expiry".
	commits []string
	// steps counts iterator steps onto keys with stepPrefix (NewIter).
	stepPrefix []byte
	steps      int
}

// NewIter counts the steps of the engine's iterators onto keys with
// stepPrefix, when it is set.
func (e *compactEngine) NewIter(lower, upper []byte) (storage.Iterator, error) {
	it, err := e.Engine.NewIter(lower, upper)
	if err != nil || e.stepPrefix == nil {
		return it, err
	}
	return &steppingIter{Iterator: it, eng: e}, nil
}

// steppingIter counts its steps onto keys with its engine's stepPrefix.
type steppingIter struct {
	storage.Iterator
	eng *compactEngine
}

func (it *steppingIter) Next() bool {
	ok := it.Iterator.Next()
	if ok && bytes.HasPrefix(it.Key(), it.eng.stepPrefix) {
		it.eng.steps++
	}
	return ok
}

type compactBatch struct {
	storage.Batch
	eng  *compactEngine
	keys [][]byte
}

func (e *compactEngine) NewBatch() storage.Batch {
	return &compactBatch{Batch: e.Engine.NewBatch(), eng: e}
}

func (b *compactBatch) AddExpiry(key []byte) { b.keys = append(b.keys, append([]byte(nil), key...)) }

func (b *compactBatch) Len() int { return b.Batch.Len() + len(b.keys) }

func (b *compactBatch) Commit(sync bool) error {
	if b.eng.hold {
		b.eng.held = append(b.eng.held, b.keys...)
		return b.Batch.Commit(sync)
	}
	return b.eng.apply(b.Batch, b.keys, sync)
}

func (b *compactBatch) CommitAsync() (func() error, error) {
	if b.eng.gate == nil {
		err := b.Commit(false)
		return func() error { return err }, nil
	}
	keys := b.keys
	return func() error {
		<-b.eng.gate
		nb := b.eng.Engine.NewBatch()
		defer nb.Close()
		return b.eng.apply(nb, keys, false)
	}, nil
}

func (e *compactEngine) apply(b storage.Batch, keys [][]byte, sync bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	events, publish, err := e.store.ApplyExpiries(b, keys)
	if err != nil {
		return err
	}
	if err := b.Commit(sync); err != nil {
		return err
	}
	publish()
	e.events += len(events)
	e.applied = append(e.applied, events...)
	e.compacted += len(keys)
	kind := "write"
	if len(keys) > 0 {
		kind = "expiry"
	}
	e.commits = append(e.commits, kind)
	return nil
}

func (e *compactEngine) applyHeld(t *testing.T) {
	t.Helper()
	b := e.Engine.NewBatch()
	defer b.Close()
	if err := e.apply(b, e.held, false); err != nil {
		t.Fatal(err)
	}
	e.held = nil
}

func openCompactStore(t *testing.T) (*Collection, *compactEngine, *clock.Manual) {
	t.Helper()
	base, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = base.Close() })
	eng := &compactEngine{Engine: base}
	clk := clock.NewManual(t0)
	s, err := Open(eng, Options{Clock: clk, Replicated: true})
	if err != nil {
		t.Fatal(err)
	}
	eng.store = s
	c, err := s.CreateCollection("db", "c", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 0}})
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}})
	return c, eng, clk
}

func mustValid(t *testing.T, c *Collection) {
	t.Helper()
	v, err := c.Validate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v.Records != c.Count() || len(v.ExtraEntries)+len(v.MissingEntries)+len(v.Errors) > 0 {
		t.Fatalf("validate: %d records, count %d, extra %v, missing %v, errors %v",
			v.Records, c.Count(), v.ExtraEntries, v.MissingEntries, v.Errors)
	}
}

func TestCompactExpiriesDeleteFromRecords(t *testing.T) {
	c, eng, clk := openCompactStore(t)
	for i := range 100 {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 7}, {Key: "t", Value: date(t0.Add(time.Duration(i) * time.Second))}})
	}
	clk.Set(t0.Add(59 * time.Second)) // documents 0..59 expired
	res, err := c.BeginExpiry("t_1", clk.Now()).Next(1000)
	if err != nil {
		t.Fatal(err)
	}
	// Each document: its own key and its entries in t_1 and k_1.
	if res.Deleted != 60 || res.DeletedKeys != 180 || c.Count() != 40 || eng.events != 60 {
		t.Fatalf("deleted %d (%d keys), %d left, %d events", res.Deleted, res.DeletedKeys, c.Count(), eng.events)
	}
	mustValid(t, c)
}

func TestCompactExpiryVoidedByEarlierWrite(t *testing.T) {
	c, eng, clk := openCompactStore(t)
	for i := range 10 {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}, {Key: "t", Value: date(t0)}})
	}
	clk.Set(t0.Add(time.Second))
	eng.hold = true
	res, err := c.BeginExpiry("t_1", clk.Now()).Next(1000)
	if err != nil || res.Deleted != 10 || len(eng.held) != 10 {
		t.Fatalf("pass: %+v, %d held, %v", res, len(eng.held), err)
	}
	eng.hold = false
	// Before the expiries apply, a write puts a new document 3 in the
	// expired one's place: its TTL entry is a new one, so the held
	// expiry of the old entry deletes nothing.
	insert(t, c, bson.D{{Key: "_id", Value: 3}, {Key: "k", Value: 3}, {Key: "t", Value: date(t0.Add(time.Hour))}})
	eng.applyHeld(t)
	if c.Count() != 1 {
		t.Fatalf("%d left, want the rewritten document alone", c.Count())
	}
	mustValid(t, c)
}

// A write that would replace an expired document whose expiry is in
// flight waits for it: its batch reaches storage after the expiry's, as
// its entry would follow it in the log, and the counts stay exact.
func TestWriteWaitsForExpiryInFlight(t *testing.T) {
	c, eng, clk := openCompactStore(t)
	for i := range 10 {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}, {Key: "t", Value: date(t0)}})
	}
	clk.Set(t0.Add(time.Second))
	eng.gate = make(chan struct{})
	pass := make(chan error, 1)
	go func() {
		res, err := c.BeginExpiry("t_1", clk.Now()).Next(1000)
		if err == nil && (res.Deleted != 10 || res.Applied == nil) {
			err = fmt.Errorf("pass: %+v", res)
		}
		pass <- err
	}()
	for c.inFlight.Len() != 10 {
		time.Sleep(time.Millisecond)
	}
	wrote := make(chan error, 1)
	go func() {
		wrote <- c.Insert(bson.D{{Key: "_id", Value: 3}, {Key: "k", Value: 3}, {Key: "t", Value: date(t0.Add(time.Hour))}}, WriteOptions{})
	}()
	select {
	case err := <-wrote:
		t.Fatalf("the insert went ahead of the expiry in flight: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(eng.gate)
	if err := <-pass; err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	eng.mu.Lock()
	commits := slices.Clone(eng.commits)
	eng.mu.Unlock()
	if n := len(commits); n < 2 || commits[n-2] != "expiry" || commits[n-1] != "write" {
		t.Fatalf("commits %v: want the expiry, then the insert", commits)
	}
	if c.Count() != 1 || c.inFlight.Len() != 0 {
		t.Fatalf("%d left (want the new document alone), %d in flight", c.Count(), c.inFlight.Len())
	}
	mustValid(t, c)
}

// TestSeekForward finds each key of an ascending run, stepping where the
// key is the next one and seeking where it is not, and reports the keys
// that are not there.
func TestSeekForward(t *testing.T) {
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	b := eng.NewBatch()
	for _, k := range []string{"a", "b", "c", "e", "g", "h"} {
		if err := b.Set([]byte(k), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	it, err := eng.NewIter([]byte("a"), []byte("z"))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for _, step := range []struct {
		key     string
		there   bool
		stepped bool // found one step on from where the iterator stood
	}{{"b", true, false}, {"c", true, true}, {"d", false, false}, {"e", true, false}, {"f", false, false}, {"h", true, true}, {"i", false, false}, {"j", false, false}} {
		if got, stepped := seekForward(it, []byte(step.key)); got != step.there || stepped != step.stepped {
			t.Fatalf("seekForward(%q) = %v, stepped %v; want %v, %v", step.key, got, stepped, step.there, step.stepped)
		}
		if step.there && string(it.Key()) != step.key {
			t.Fatalf("seekForward(%q) left the iterator at %q", step.key, it.Key())
		}
	}
}

// withMissingKey adds to held, TTL entry keys in order, a key storage
// lacks, right before the stored entry among them they lack (the late one's):
// its apply steps onto the late entry, and the next onto the entry after.
func withMissingKey(t *testing.T, eng *compactEngine, c *Collection, held [][]byte) [][]byte {
	t.Helper()
	prefix := c.state.Load().ttl[0].prefix
	it, err := eng.Engine.NewIter(prefix, prefixEnd(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var late []byte // the first stored entry among the held ones that they lack
	for ok := it.SeekGE(held[0]); ok && late == nil && bytes.Compare(it.Key(), held[len(held)-1]) < 0; ok = it.Next() {
		if !slices.ContainsFunc(held, func(k []byte) bool { return bytes.Equal(k, it.Key()) }) {
			late = bytes.Clone(it.Key())
		}
	}
	if late == nil {
		t.Fatal("no entry among the held ones is missing from them")
	}
	missing := late[:len(late)-1]
	i, _ := slices.BinarySearchFunc(held, missing, bytes.Compare)
	if i == 0 || i == len(held) || bytes.Compare(held[i-1], missing) >= 0 || bytes.Compare(held[i], late) <= 0 {
		t.Fatalf("the missing key %x does not fall between two held keys, right before %x", missing, late)
	}
	return slices.Insert(held, i, missing)
}

// runCounter is a batch that counts the range deletions of runs.
type runCounter struct {
	storage.Batch
	runs int
}

func (b *runCounter) DeleteRun(keys [][]byte, expiredAt int64) error {
	b.runs++
	return b.Batch.(storage.RunDeleter).DeleteRun(keys, expiredAt)
}

// TestCompactExpiriesDeleteRuns: an apply deletes a run of expired
// documents' keys with nothing else stored between them as one range
// deletion, and what else is stored stays: a live document between
// expired ones, index entries of live documents among the expired
// ones' (k_1 holds every seventh k), an expired document's TTL entry
// written after the pass, between two the pass took, and the writes the
// batch holds already, which storage does not show, with which it
// deletes no range. The TTL entries it found one step apart it deletes
// as a run without reading them again.
func TestCompactExpiriesDeleteRuns(t *testing.T) {
	cases := []struct {
		name     string
		live     []int // documents among 0..59 dated an hour on
		ownWrite bool  // the batch holds a write before the expiries
		late     bool  // a document dated among the expired is inserted after the pass
		missing  bool  // the entry holds a key storage lacks, right before the late one's
		wantRuns bool
	}{
		{"in order", nil, false, false, false, true},
		{"live documents between", []int{20, 41}, false, false, false, true},
		{"an entry written after the pass", nil, false, true, false, true},
		{"one written after a key not found", nil, false, true, true, true},
		{"the batch's own write first", nil, true, false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, eng, clk := openCompactStore(t)
			for i := range 100 {
				at := t0.Add(time.Duration(i) * time.Second)
				if slices.Contains(tc.live, i) {
					at = t0.Add(time.Hour)
				}
				insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 7}, {Key: "t", Value: date(at)}})
			}
			clk.Set(t0.Add(59 * time.Second)) // documents 0..59 expired
			eng.hold = true
			if _, err := c.BeginExpiry("t_1", clk.Now()).Next(1000); err != nil {
				t.Fatal(err)
			}
			eng.hold = false
			wantLeft := 40 + len(tc.live)
			if tc.late {
				insert(t, c, bson.D{{Key: "_id", Value: 1000}, {Key: "k", Value: 3}, {Key: "t", Value: date(t0.Add(30 * time.Second))}})
				wantLeft++
			}
			if tc.missing {
				eng.held = withMissingKey(t, eng, c, eng.held)
			}
			eng.stepPrefix = c.state.Load().ttl[0].prefix
			b := &runCounter{Batch: eng.Engine.NewBatch()}
			defer b.Close()
			if tc.ownWrite {
				if err := b.Set([]byte{0xff, 'x'}, []byte("own")); err != nil {
					t.Fatal(err)
				}
			}
			if err := eng.apply(b, eng.held, false); err != nil {
				t.Fatal(err)
			}
			if (b.runs > 0) != tc.wantRuns {
				t.Errorf("%d range deletions of runs, want some: %v", b.runs, tc.wantRuns)
			}
			// The apply steps from each expired TTL entry to the next;
			// reading them again to find their run would double it.
			if expired := 60 - len(tc.live); tc.wantRuns && !tc.late && eng.steps != expired-1 {
				t.Errorf("%d steps onto TTL entries for %d expired, want %d", eng.steps, expired, expired-1)
			}
			if c.Count() != int64(wantLeft) {
				t.Errorf("%d documents left, want %d", c.Count(), wantLeft)
			}
			// The late document has expired too: it stays in storage
			// (counted, and its entries checked by validate), unread.
			wantRead := wantLeft
			if tc.late {
				wantRead--
			}
			got := scanIDs(t, c, bson.D{}, bson.D{{Key: "t", Value: 1}})
			slices.Sort(got)
			if len(got) != wantRead || len(slices.Compact(slices.Clone(got))) != len(got) {
				t.Errorf("scan: %v, want %d documents", got, wantRead)
			}
			for _, id := range tc.live {
				if !slices.Contains(got, int32(id)) {
					t.Errorf("live document %d is gone", id)
				}
			}
			mustValid(t, c)
		})
	}
}
