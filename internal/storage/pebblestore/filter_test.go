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

	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

// filteredStore is a store whose group "iA" holds ranges 0 … ranges-1
// and has a complete value filter, made by the warm-up after a miss.
func filteredStore(t *testing.T, ranges int) (*Store, *rescache.Cache) {
	t.Helper()
	cache := groupedCache(8<<20, nil)
	s := openT(t, Options{Dir: t.TempDir(), Resident: cache})
	b := s.NewBatch()
	for v := range ranges {
		if err := b.Set(entryAt(v, 0), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	readRange(t, s, 0) // a miss of a range with an entry: the warm-up
	waitWarmed(t, cache, 0)
	if !cache.KnownEmpty(rangeLo(0xffff)) {
		t.Fatal("no complete filter after a warm-up that read the whole group")
	}
	return s, cache
}

// With a filter, a value never written is looked up without a read of
// storage, and a value's first entry is resident from its commit on; the
// values the warm-up found are not known empty. Every read equals
// storage's.
func TestFilterMakesNewValuesResident(t *testing.T) {
	const ranges = 300
	s, cache := filteredStore(t, ranges)
	defer s.Close()
	misses := cache.Stats().Misses
	for v := ranges; v < 2*ranges; v++ {
		if got := readRange(t, s, v); got != nil {
			t.Fatalf("range %d never written read %q", v, got)
		}
		b := s.NewBatch()
		if err := b.Set(entryAt(v, 1), []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		if got, want := readRange(t, s, v), []string{string(entryAt(v, 1)) + "=x"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("range %d after its first entry: %q, want %q", v, got, want)
		}
	}
	if n := cache.Stats().Misses - misses; n != 0 {
		t.Fatalf("%d misses reading new values and their first entries", n)
	}
	for v := range ranges {
		if cache.KnownEmpty(rangeLo(v)) {
			t.Fatalf("range %d, written before the filter, known empty", v)
		}
	}
}

// Writers set and delete entries of fresh values, two writers on each
// value at once, while the filter claims first entries. After each commit
// a writer reads its value's range and must find its own entry, or not
// after its delete; at the end every range read through the cache is
// storage's. A claim that ignored a writer under way, or a ticket not
// checked, installs a range without the other writer's entry.
func TestFilterClaimsUnderContention(t *testing.T) {
	const (
		ranges    = 2000 // a filter for four times as many
		writers   = 4
		rounds    = 250
		minClaims = 20
	)
	s, cache := filteredStore(t, ranges)
	defer s.Close()
	var next atomic.Int64
	// Rounds go on until enough writes claimed their value, so that the
	// races above were run with claims in them, and not for ever.
	for cache.Stats().Claimed < minClaims {
		if next.Load() > 4*ranges {
			t.Fatalf("%d writes claimed their value, want %d", cache.Stats().Claimed, minClaims)
		}
		errs := make(chan error, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- claimRounds(s, w, rounds, &next, ranges)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	checkRangesExact(t, s, ranges+int(next.Load()/2)+1)
}

// claimRounds is one writer of TestFilterClaimsUnderContention: each
// round takes the next fresh value (two writers share each), sets its
// entry, reads it back, and deletes it every third round.
func claimRounds(s *Store, w, rounds int, next *atomic.Int64, base int) error {
	rng := rand.New(rand.NewPCG(uint64(w), 1))
	for range rounds {
		// Writers out of step: some writes alone in their group, which
		// may claim, and some racing.
		time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
		v := base + int(next.Add(1)/2)
		own := entryAt(v, w+1)
		if err := commitOne(s, own, true); err != nil {
			return err
		}
		if got := readKeys(s, v); !bytes.Contains(got, own) {
			return fmt.Errorf("writer %d, range %d: read %q after setting %s", w, v, got, own)
		}
		if v%3 != 0 {
			continue
		}
		if err := commitOne(s, own, false); err != nil {
			return err
		}
		if got := readKeys(s, v); bytes.Contains(got, own) {
			return fmt.Errorf("writer %d, range %d: read %q after deleting %s", w, v, got, own)
		}
	}
	return nil
}

func commitOne(s *Store, key []byte, set bool) error {
	b := s.NewBatch()
	var err error
	if set {
		err = b.Set(key, nil)
	} else {
		err = b.Delete(key)
	}
	if err != nil {
		return err
	}
	return b.Commit(false)
}

// A filter is made only after every commit that began before it ended:
// drain waits for a commit under way, and a commit entering after the
// drain began is not waited for.
func TestDrainWaitsForCommitsUnderWay(t *testing.T) {
	var e commitEpochs
	early := e.enter()
	done := make(chan bool)
	go func() { done <- e.drain(nil) }()
	time.Sleep(5 * time.Millisecond)
	late := e.enter() // after the drain moved the epoch: not waited for
	select {
	case <-done:
		t.Fatal("drain ended with a commit under way")
	case <-time.After(20 * time.Millisecond):
	}
	e.leave(early)
	if !<-done {
		t.Fatal("drain gave up")
	}
	e.leave(late)
}
