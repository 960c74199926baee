package pebblestore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

// groupedCache holds "d..." values and ranges of index entries
// "i<group><4 hex: value><4 hex: id>", an equality prefix being
// "i<group><value>" and a group "i<group>".
func groupedCache(maxBytes int64, clk clock.Clock) *rescache.Cache {
	c := rescache.New(maxBytes, clk)
	c.SetPolicy(rescache.Policy{
		Admit:         func(k []byte) bool { return len(k) > 0 && k[0] == 'd' },
		EqualityLen:   func(k []byte) (int, bool) { return 6, len(k) >= 6 && k[0] == 'i' },
		RangeGroupLen: 2,
		RangeKey:      func(k []byte) bool { return len(k) > 0 && k[0] == 'i' },
	})
	return c
}

func rangeLo(v int) []byte { return fmt.Appendf(nil, "iA%04x", v) }

func entryAt(v, id int) []byte { return fmt.Appendf(nil, "iA%04x%04x", v, id) }

// readRange reads the range of value v from r as "key=value" strings.
func readRange(t testing.TB, r storage.Reader, v int) []string {
	lo := rangeLo(v)
	it, err := r.NewIter(lo, fmt.Appendf(nil, "iA%04x", v+1))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitWarmed waits until the cache has seen more than ended warm-ups end.
func waitWarmed(t *testing.T, cache *rescache.Cache, ended int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); cache.Stats().WarmUps <= ended; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no warm-up ended")
		}
	}
}

// After one miss of a range with entries in a group, a warm-up keeps
// every range of it the cache has room for; they are then read without a
// miss, and as storage has them. The warm-up, background work, yields
// before each chunk.
func TestWarmUpKeepsTheGroupResident(t *testing.T) {
	const ranges = 1000 // several chunks
	cache := groupedCache(8<<20, nil)
	var yields atomic.Int64
	s := openT(t, Options{Dir: t.TempDir(), Resident: cache, Yield: func() { yields.Add(1) }})
	defer s.Close()
	b := s.NewBatch()
	for v := range ranges {
		for id := range 1 + v%3 {
			if err := b.Set(entryAt(v, id), fmt.Appendf(nil, "d%d", id)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	before := yields.Load()
	readRange(t, s, 0) // the miss, whose read may keep range 0 first
	waitWarmed(t, cache, 0)
	if n, chunks := yields.Load()-before, int64(ranges/warmChunk); n < chunks {
		t.Fatalf("the warm-up yielded %d times over %d or more chunks", n, chunks)
	}
	if n := cache.Stats().Warmed; n < ranges-1 {
		t.Fatalf("the warm-up kept %d ranges, want %d", n, ranges)
	}
	misses := cache.Stats().Misses
	snap := s.NewSnapshot()
	defer snap.Close()
	for v := range ranges {
		if got, want := readRange(t, s, v), readRange(t, snap, v); !reflect.DeepEqual(got, want) {
			t.Fatalf("range %d: through the cache %q, in storage %q", v, got, want)
		}
	}
	if n := cache.Stats().Misses - misses; n != 0 {
		t.Fatalf("%d ranges missed after the warm-up", n)
	}
}

// A warm-up of a group larger than the cache fills every shard, not only
// up to the first that is full: shards fill unevenly, and the ranges of
// the others still fit. What is left in each is less than a range.
func TestWarmUpFillsEveryShard(t *testing.T) {
	const ranges = 4000 // about two and a half times what the cache holds
	cache := groupedCache(256<<10, nil)
	s := openT(t, Options{Dir: t.TempDir(), Resident: cache})
	defer s.Close()
	b := s.NewBatch()
	for v := range ranges {
		for id := range 1 + v%3 {
			if err := b.Set(entryAt(v, id), []byte("d")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	readRange(t, s, 0)
	waitWarmed(t, cache, 0)
	// A range here is at most 3 entries and the cache's per-entry
	// overhead: under 400 bytes, in each of the 16 shards.
	st := cache.Stats()
	if left := st.MaxBytes - st.Bytes; left > 16*400 {
		t.Fatalf("the warm-up left %d of %d bytes unused (%d ranges kept of %d)", left, st.MaxBytes, st.Warmed, ranges)
	}
	if st.Evictions != 0 {
		t.Fatalf("the warm-up evicted %d entries", st.Evictions)
	}
}

// A warm-up stops at a range the cache does not hold (more entries than
// a range keeps): an index that is not selective is not scanned through.
func TestWarmUpStopsAtAnUnfitRange(t *testing.T) {
	cache := groupedCache(8<<20, nil)
	s := openT(t, Options{Dir: t.TempDir(), Resident: cache})
	defer s.Close()
	b := s.NewBatch()
	for id := range 3 * cache.MaxRangeEntries() {
		if err := b.Set(entryAt(1, id), nil); err != nil {
			t.Fatal(err)
		}
	}
	for v := 2; v < 10; v++ {
		if err := b.Set(entryAt(v, 0), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	readRange(t, s, 2) // a miss of a range with an entry
	waitWarmed(t, cache, 0)
	if n := cache.Stats().Warmed; n != 0 {
		t.Fatalf("the warm-up kept %d ranges past an unfit one, want none", n)
	}
}

// Writers change their own ranges while warm-ups run again and again
// (each after the cache is emptied); after every commit a writer reads
// its range through the cache and must see exactly what it wrote, and
// at the end every range read through the cache is storage's.
func TestWarmUpUnderWrites(t *testing.T) {
	const (
		writers = 4
		ranges  = 400
		warms   = 8
	)
	clk := clock.NewManual(time.Unix(1000, 0))
	cache := groupedCache(8<<20, clk)
	s := openT(t, Options{Dir: t.TempDir(), Resident: cache})
	defer s.Close()
	b := s.NewBatch()
	for v := range ranges + 1 { // range ranges, which no writer owns, starts each warm-up
		if err := b.Set(entryAt(v, 0), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	stop := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- writeOwnRanges(s, w, writers, ranges, stop)
		}()
	}
	for i := range warms {
		cache.Reset()
		// Past the longest wait between warm-ups: one that found most
		// ranges already read through the cache by the writers doubles
		// the wait (rescache's maxWarmGap bounds it at eight minutes).
		clk.Advance(time.Hour)
		readRange(t, s, ranges)
		waitWarmed(t, cache, int64(i))
	}
	close(stop)
	wg.Wait()
	if cache.Stats().Warmed == 0 {
		t.Fatal("no warm-up kept a range")
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkRangesExact(t, s, ranges)
}

// checkRangesExact compares ranges 0 … ranges-1 read through the cache
// with a snapshot's.
func checkRangesExact(t *testing.T, s *Store, ranges int) {
	t.Helper()
	snap := s.NewSnapshot()
	defer snap.Close()
	for v := range ranges {
		if got, want := readRange(t, s, v), readRange(t, snap, v); !reflect.DeepEqual(got, want) {
			t.Fatalf("range %d: through the cache %q, in storage %q", v, got, want)
		}
	}
}

// writeOwnRanges adds and deletes entries in the ranges v ≡ w (mod n)
// until stop is closed, checking after each commit that a read of the
// range sees exactly its entries.
func writeOwnRanges(s *Store, w, n, ranges int, stop <-chan struct{}) error {
	rng := rand.New(rand.NewPCG(uint64(w), 7))
	own := map[int]map[int]bool{}
	for v := w; v < ranges; v += n {
		own[v] = map[int]bool{0: true}
	}
	nextID := 1
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		if nextID == 1<<16 {
			return nil // ids are four hex digits
		}
		v := w + n*rng.IntN((ranges-w+n-1)/n)
		b := s.NewBatch()
		var err error
		if ids := own[v]; len(ids) > 0 && rng.IntN(2) == 0 {
			for id := range ids {
				err = b.Delete(entryAt(v, id))
				delete(ids, id)
				break
			}
		} else {
			err = b.Set(entryAt(v, nextID), nil)
			own[v][nextID] = true
			nextID++
		}
		if err == nil {
			err = b.Commit(false)
		}
		if err != nil {
			return err
		}
		if got, want := readKeys(s, v), ownKeys(v, own[v]); !bytes.Equal(got, want) {
			return fmt.Errorf("writer %d, range %d: read %q after its write, want %q", w, v, got, want)
		}
	}
}

func readKeys(r storage.Reader, v int) []byte {
	it, err := r.NewIter(rangeLo(v), rangeLo(v+1))
	if err != nil {
		return []byte(err.Error())
	}
	defer it.Close()
	var out []byte
	for ok := it.First(); ok; ok = it.Next() {
		out = append(append(out, it.Key()...), ' ')
	}
	return out
}

func ownKeys(v int, ids map[int]bool) []byte {
	var out []byte
	for id := range 1 << 16 {
		if len(out) == len(ids)*11 {
			break
		}
		if ids[id] {
			out = append(append(out, entryAt(v, id)...), ' ')
		}
	}
	return out
}
