package docstore

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// shardOwnership owns the documents whose "shard" field is "A", as a
// shard member's filter owns its chunks; held holds every namespace.
type shardOwnership struct{ held bool }

func (o shardOwnership) ExpiryOwner(string) (func(bson.D) bool, bool) {
	return func(doc bson.D) bool {
		v, _ := bsonutil.Field(doc, "shard")
		return v == "A"
	}, o.held
}

// expiryPath is one way the docstore changes a document on its own. run
// sets it up with an owned document "a" and an orphan "b" (a store with
// ownership o, none when nil), makes it act on both, and returns the _ids
// its change events named (each carries marker).
type expiryPath struct {
	name   string
	marker string // the event's mark: expired, evicted or expiredElements
	run    func(t *testing.T, o Ownership) []string
}

// expiryPaths are every path of ownership.go: the TTL monitor's pass by
// deletion record, by reading, over a clustered collection, as compact
// expiries a replica set applies, over expiring elements; a write that
// finds an expired document in its way; an lruLimit eviction.
func expiryPaths() []expiryPath {
	return []expiryPath{
		{"monitor by deletion record", "expired", runRecordPass},
		{"monitor by reading", "expired", runReadPass},
		{"monitor over a clustered collection", "expired", runClusteredPass},
		{"compact expiries applied by every member", "expired", runCompactPass},
		{"monitor over expiring elements", "expiredElements", runElementsPass},
		{"write finding an expired document", "expired", runWriteInTheWay},
		{"lruLimit eviction", "evicted", runEviction},
	}
}

// TestExpiryOfOrphansIsSilent: on every path, the change the expiry
// machinery makes to an orphan records no event, while the owned
// document's does, and both documents are changed; without ownership
// both report.
func TestExpiryOfOrphansIsSilent(t *testing.T) {
	markers := map[string]bool{}
	for _, path := range expiryPaths() {
		markers[path.marker] = true
		t.Run(path.name, func(t *testing.T) {
			if got := path.run(t, shardOwnership{}); !slices.Equal(got, []string{"a"}) {
				t.Errorf("with ownership, events for %v, want [a] only", got)
			}
			if got := path.run(t, nil); !slices.Equal(got, []string{"a", "b"}) {
				t.Errorf("without ownership, events for %v, want [a b]", got)
			}
		})
	}
	// Every kind of change the machinery marks has a path.
	for _, m := range []string{"expired", "evicted", "expiredElements"} {
		if !markers[m] {
			t.Errorf("no path makes %s events", m)
		}
	}
}

// TestHeldOwnershipLeavesExpiryForLater: while ownership is held, a pass
// deletes nothing; once it is not, the next pass deletes both, silently
// for the orphan.
func TestHeldOwnershipLeavesExpiryForLater(t *testing.T) {
	s, clk := openStore(t)
	owner := &switchOwnership{}
	owner.held.Store(true)
	s.SetOwnership(owner)
	c := ttlPair(t, s, clk)
	if res := runWholePass(t, c, "at_1", clk.Now()); res.Deleted != 0 {
		t.Fatalf("held: a pass deleted %d", res.Deleted)
	}
	if c.Count() != 2 {
		t.Fatalf("held: %d documents stored, want 2", c.Count())
	}
	owner.held.Store(false)
	if res := runWholePass(t, c, "at_1", clk.Now()); res.Deleted != 2 {
		t.Fatalf("released: a pass deleted %d, want 2", res.Deleted)
	}
	if got := machineEvents(t, s); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("events for %v, want [a]", got)
	}
}

type switchOwnership struct{ held atomic.Bool }

func (o *switchOwnership) ExpiryOwner(ns string) (func(bson.D) bool, bool) {
	owns, _ := shardOwnership{}.ExpiryOwner(ns)
	return owns, o.held.Load()
}

// ownedStore is a logged store with ownership o (none when nil).
func ownedStore(t *testing.T, o Ownership) (*Store, *clock.Manual) {
	s, clk := openStore(t)
	if o != nil {
		s.SetOwnership(o)
	}
	return s, clk
}

// indexedColl creates db.<name> with the indexes specs describe.
func indexedColl(t *testing.T, s *Store, name string, specs ...bson.D) *Collection {
	t.Helper()
	c, err := s.CreateCollection("db", name, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range specs {
		mustIndex(t, c, spec)
	}
	return c
}

// ttlPair makes db.c with an at_1 TTL index (60 s) holding "a" (owned)
// and "b" (an orphan), both expired by moving the clock.
func ttlPair(t *testing.T, s *Store, clk *clock.Manual) *Collection {
	t.Helper()
	c := indexedColl(t, s, "c", bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "at_1"}, {Key: "expireAfterSeconds", Value: 60}})
	for _, d := range []struct{ id, shard string }{{"a", "A"}, {"b", "B"}} {
		insert(t, c, bson.D{{Key: "_id", Value: d.id}, {Key: "shard", Value: d.shard}, {Key: "at", Value: date(clk.Now())}})
	}
	clk.Advance(61 * time.Second)
	return c
}

// runWholePass runs a whole TTL pass over index, waiting for batches in flight.
func runWholePass(t *testing.T, c *Collection, index string, now time.Time) ExpireResult {
	t.Helper()
	var total ExpireResult
	p := c.BeginExpiry(index, now)
	for range 100 {
		res, err := p.Next(100)
		if err == nil && res.Applied != nil {
			err = res.Applied()
		}
		if err != nil {
			t.Fatal(err)
		}
		total.Deleted += res.Deleted
		total.Read += res.Read
		total.Trimmed += res.Trimmed
		if !res.More {
			return total
		}
	}
	t.Fatal("the pass did not end in 100 batches")
	return total
}

// machineEvents lists, in order, the _ids of the events in s's change log
// that the expiry machinery made (expired, evicted, expiredElements).
func machineEvents(t *testing.T, s *Store) []string {
	t.Helper()
	var ids []string
	err := changestream.Scan(s.Engine(), changestream.Position{}, func(rec changestream.Record) (bool, error) {
		ev := rec.Event
		if ev.Expired == nil && ev.Evicted == nil && ev.Elements == nil {
			return true, nil
		}
		id, err := ev.DocumentID()
		ids = append(ids, fmt.Sprint(id))
		return true, err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

func runRecordPass(t *testing.T, o Ownership) []string {
	s, clk := ownedStore(t, o)
	c := ttlPair(t, s, clk)
	if res := runWholePass(t, c, "at_1", clk.Now()); res.Deleted != 2 || res.Read != 0 {
		t.Fatalf("pass deleted %d, %d of them read; want 2 by their records", res.Deleted, res.Read)
	}
	return machineEvents(t, s)
}

func runReadPass(t *testing.T, o Ownership) []string {
	s, clk := ownedStore(t, o)
	c := ttlPair(t, s, clk)
	// A new index makes the documents' deletion records unfit: the pass
	// reads them.
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "shard", Value: 1}}}, {Key: "name", Value: "shard_1"}})
	if res := runWholePass(t, c, "at_1", clk.Now()); res.Deleted != 2 || res.Read != 2 {
		t.Fatalf("pass deleted %d, %d of them read; want 2 read", res.Deleted, res.Read)
	}
	return machineEvents(t, s)
}

func runClusteredPass(t *testing.T, o Ownership) []string {
	s, clk := ownedStore(t, o)
	c, err := s.CreateCollection("db", "cl", CreateOptions{Clustered: true, ClusteredTTL: true, ExpireAfter: 30})
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]bson.DateTime{"a": date(clk.Now()), "b": date(clk.Now().Add(time.Second))}
	insert(t, c, bson.D{{Key: "_id", Value: at["a"]}, {Key: "shard", Value: "A"}})
	insert(t, c, bson.D{{Key: "_id", Value: at["b"]}, {Key: "shard", Value: "B"}})
	clk.Advance(time.Minute)
	if res := runWholePass(t, c, c.TTLIndexes()[0], clk.Now()); res.Deleted != 2 {
		t.Fatalf("pass deleted %d, want 2", res.Deleted)
	}
	var out []string
	for _, id := range machineEvents(t, s) {
		for name, d := range at {
			if id == fmt.Sprint(d) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

func runElementsPass(t *testing.T, o Ownership) []string {
	s, clk := ownedStore(t, o)
	c := indexedColl(t, s, "carts", bson.D{{Key: "key", Value: bson.D{{Key: "items.addedAt", Value: 1}}}, {Key: "name", Value: "lines"},
		{Key: "expireAfterSeconds", Value: 60}, {Key: "expireElements", Value: true}})
	for _, d := range []struct{ id, shard string }{{"a", "A"}, {"b", "B"}} {
		insert(t, c, bson.D{{Key: "_id", Value: d.id}, {Key: "shard", Value: d.shard}, {Key: "items", Value: bson.A{
			bson.D{{Key: "addedAt", Value: date(clk.Now().Add(-time.Hour))}}, bson.D{{Key: "addedAt", Value: date(clk.Now())}}}}})
	}
	if res := runWholePass(t, c, "lines", clk.Now()); res.Trimmed != 2 {
		t.Fatalf("pass trimmed %d documents, want 2", res.Trimmed)
	}
	return machineEvents(t, s)
}

func runWriteInTheWay(t *testing.T, o Ownership) []string {
	s, clk := ownedStore(t, o)
	c := ttlPair(t, s, clk)
	for _, d := range []struct{ id, shard string }{{"a", "A"}, {"b", "B"}} {
		// The same _id again: the expired document goes first.
		insert(t, c, bson.D{{Key: "_id", Value: d.id}, {Key: "shard", Value: d.shard}, {Key: "at", Value: date(clk.Now())}})
	}
	if c.Count() != 2 {
		t.Fatalf("%d documents stored, want the 2 new ones", c.Count())
	}
	return machineEvents(t, s)
}

func runEviction(t *testing.T, o Ownership) []string {
	s, clk := ownedStore(t, o)
	c := indexedColl(t, s, "cache", bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "lru"},
		{Key: "lruLimit", Value: bson.D{{Key: "documents", Value: 1}}}})
	// Each insert evicts the one before: "b", then "a".
	for i, d := range []struct{ id, shard string }{{"b", "B"}, {"a", "A"}, {"c", "A"}} {
		insert(t, c, bson.D{{Key: "_id", Value: d.id}, {Key: "shard", Value: d.shard}, {Key: "at", Value: date(clk.Now().Add(time.Duration(i) * time.Minute))}})
	}
	if c.Count() != 1 {
		t.Fatalf("%d documents stored, want 1", c.Count())
	}
	return machineEvents(t, s)
}

// runCompactPass runs the pass on a replica set's engine (compact
// expiries, applied as every member applies them): the events are those
// the apply wrote and those batches carried in full.
func runCompactPass(t *testing.T, o Ownership) []string {
	base, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = base.Close() })
	eng := &loggedCompactEngine{compactEngine: &compactEngine{Engine: base}}
	clk := clock.NewManual(t0)
	s, err := Open(eng, Options{Clock: clk, Replicated: true})
	if err != nil {
		t.Fatal(err)
	}
	eng.store = s
	if o != nil {
		s.SetOwnership(o)
	}
	c := ttlPair(t, s, clk)
	eng.resetEvents()
	if res := runWholePass(t, c, "at_1", clk.Now()); res.Deleted != 2 {
		t.Fatalf("pass deleted %d, want 2", res.Deleted)
	}
	if c.Count() != 0 {
		t.Fatalf("%d documents left", c.Count())
	}
	// The orphan's deletion goes in full, since no member asks its
	// ownership at apply.
	if want := map[bool]int{true: 1, false: 2}[o != nil]; eng.compactedCount() != want {
		t.Fatalf("%d deletions went as compact expiries, want %d", eng.compactedCount(), want)
	}
	return eng.expiredIDs(t)
}

// loggedCompactEngine is compactEngine whose batches also record the
// events they carry, as a replica set's entry carries them.
type loggedCompactEngine struct {
	*compactEngine
	mu     sync.Mutex
	events [][]byte
}

func (e *loggedCompactEngine) compactedCount() int {
	e.compactEngine.mu.Lock()
	defer e.compactEngine.mu.Unlock()
	return e.compactEngine.compacted
}

func (e *loggedCompactEngine) NewBatch() storage.Batch {
	return &loggedCompactBatch{compactBatch: &compactBatch{Batch: e.Engine.NewBatch(), eng: e.compactEngine}, eng: e}
}

func (e *loggedCompactEngine) add(ev []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, append([]byte(nil), ev...))
}

func (e *loggedCompactEngine) resetEvents() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = nil
	e.compactEngine.mu.Lock()
	defer e.compactEngine.mu.Unlock()
	e.compactEngine.applied = nil
}

// expiredIDs lists the _ids of the expiry events the batches carried
// and the applies wrote.
func (e *loggedCompactEngine) expiredIDs(t *testing.T) []string {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.compactEngine.mu.Lock()
	defer e.compactEngine.mu.Unlock()
	var ids []string
	for _, raw := range append(slices.Clone(e.events), e.compactEngine.applied...) {
		ev, err := changestream.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Expired == nil {
			continue
		}
		id, err := ev.DocumentID()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, fmt.Sprint(id))
	}
	slices.Sort(ids)
	return ids
}

type loggedCompactBatch struct {
	*compactBatch
	eng *loggedCompactEngine
}

func (b *loggedCompactBatch) AddEvent(ev []byte) { b.eng.add(ev) }

func (b *loggedCompactBatch) RecordsEvents() bool { return true }
