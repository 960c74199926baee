package pebblestore

import (
	"bytes"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

// writeKinds is every way a batch writes, each with what it does to the
// keys "dk1" (a value the cache holds) and "dk2" (an entry of the cached
// range "dk"). TestEveryBatchWriteKeepsTheCacheExact compares the table
// with storage.Batch's methods, so a new write method needs a row.
var writeKinds = map[string]func(b storage.Batch) error{
	"Set": func(b storage.Batch) error {
		if err := b.Set([]byte("dk1"), []byte("new")); err != nil {
			return err
		}
		return b.Set([]byte("dk2"), []byte("new"))
	},
	"Delete": func(b storage.Batch) error {
		if err := b.Delete([]byte("dk1")); err != nil {
			return err
		}
		return b.Delete([]byte("dk2"))
	},
	"DeleteRange": func(b storage.Batch) error { return b.DeleteRange([]byte("dk"), []byte("dl")) },
	// The cache learns the run's keys and drops each, where DeleteRange's
	// range makes it search every entry.
	"DeleteRun": func(b storage.Batch) error {
		later := time.Now().Add(time.Hour).UnixNano() // as DeleteExpired's row
		return b.(storage.RunDeleter).DeleteRun([][]byte{[]byte("dk1"), []byte("dk2")}, later)
	},
	// An expiry the cache's clock has not reached (a secondary's clock
	// behind its primary's): an ordinary deletion. TestDeleteExpired has
	// values the clock has seen expire.
	"DeleteExpired": func(b storage.Batch) error {
		d := b.(storage.ExpiredDeleter)
		later := time.Now().Add(time.Hour).UnixNano()
		if err := d.DeleteExpired([]byte("dk1"), later); err != nil {
			return err
		}
		return d.DeleteExpired([]byte("dk2"), later)
	},
	"NoteSoleEntry": func(b storage.Batch) error {
		if err := b.Delete([]byte("dk1")); err != nil {
			return err
		}
		if err := b.Set([]byte("dk2"), []byte("new")); err != nil {
			return err
		}
		b.(storage.SoleEntryNoter).NoteSoleEntry([]byte("dk"), []byte("dk2"), []byte("new"))
		return nil
	},
	// Sets of a held key and of keys not held, in a batch that installs
	// only at held keys. TestSkipSpareInstalls checks what it keeps.
	"SkipSpareInstalls": func(b storage.Batch) error {
		b.(storage.SpareInstallSkipper).SkipSpareInstalls()
		for _, k := range []string{"dk1", "dk2", "dk3"} {
			if err := b.Set([]byte(k), []byte("new")); err != nil {
				return err
			}
		}
		return nil
	},
}

// notWrites are storage.Batch's methods that write nothing.
var notWrites = map[string]bool{"Commit": true, "Len": true, "Close": true}

// batchInterfaces are storage.Batch and the optional interfaces of
// batches that write.
var batchInterfaces = []reflect.Type{
	reflect.TypeOf((*storage.Batch)(nil)).Elem(),
	reflect.TypeOf((*storage.ExpiredDeleter)(nil)).Elem(),
	reflect.TypeOf((*storage.SoleEntryNoter)(nil)).Elem(),
	reflect.TypeOf((*storage.SpareInstallSkipper)(nil)).Elem(),
	reflect.TypeOf((*storage.RunDeleter)(nil)).Elem(),
}

func TestEveryBatchWriteKeepsTheCacheExact(t *testing.T) {
	for _, batchType := range batchInterfaces {
		for i := range batchType.NumMethod() {
			name := batchType.Method(i).Name
			if _, ok := writeKinds[name]; !ok && !notWrites[name] {
				t.Errorf("%s.%s has no row in writeKinds", batchType, name)
			}
		}
	}
	for name, write := range writeKinds {
		for _, sync := range []bool{false, true} {
			t.Run(name, func(t *testing.T) {
				checkWriteKeepsCacheExact(t, write, sync)
			})
		}
	}
}

func checkWriteKeepsCacheExact(t *testing.T, write func(storage.Batch) error, sync bool) {
	cache := admitAll()
	s := openT(t, Options{Dir: t.TempDir(), Resident: cache})
	defer s.Close()
	for _, k := range []string{"dk1", "dk2"} {
		if err := commitKV(s, k, "old"); err != nil {
			t.Fatal(err)
		}
	}
	readAll(t, s) // fills the cache
	readAll(t, s)
	if st := cache.Stats(); st.Hits == 0 {
		t.Fatalf("second read was not served by the cache: %+v", st)
	}
	b := s.NewBatch()
	if err := write(b); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(sync); err != nil {
		t.Fatal(err)
	}
	cached := readAll(t, s)
	snap := s.NewSnapshot() // snapshots never read the cache
	defer snap.Close()
	want := readAllFrom(t, snap)
	if !reflect.DeepEqual(cached, want) {
		t.Fatalf("through the cache %q, in storage %q", cached, want)
	}
}

func commitKV(s *Store, k, v string) error {
	b := s.NewBatch()
	defer b.Close()
	if err := b.Set([]byte(k), []byte(v)); err != nil {
		return err
	}
	return b.Commit(false)
}

func readAll(t *testing.T, s *Store) []string { return readAllFrom(t, s) }

// readAllFrom reads dk1 by Get and the range "dk" by iterator.
func readAllFrom(t *testing.T, r storage.Reader) []string {
	t.Helper()
	var out []string
	v, err := r.Get([]byte("dk1"))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		out = append(out, "dk1 absent")
	case err != nil:
		t.Fatal(err)
	default:
		out = append(out, "dk1="+string(v))
	}
	it, err := r.NewIter([]byte("dk"), []byte("dl"))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, string(bytes.Clone(it.Key()))+"="+string(it.Value()))
	}
	return out
}

// TestDeleteExpired: a deletion of values the cache's clock has seen
// expire drops only their key's range, not the values (which the cache
// never serves again); one whose expiry the clock has not reached is an
// ordinary deletion. Either way reads through the cache agree with
// storage.
func TestDeleteExpired(t *testing.T) {
	// expiredDeletions are the batch's ways to delete values that expired
	// at an instant: one by one, and as a run (the row's test compares
	// the table with the batch's methods of expired deletion).
	expiredDeletions := map[string]func(b storage.Batch, keys [][]byte, at int64) error{
		"DeleteExpired": func(b storage.Batch, keys [][]byte, at int64) error {
			for _, k := range keys {
				if err := b.(storage.ExpiredDeleter).DeleteExpired(k, at); err != nil {
					return err
				}
			}
			return nil
		},
		"DeleteRun": func(b storage.Batch, keys [][]byte, at int64) error {
			return b.(storage.RunDeleter).DeleteRun(keys, at)
		},
	}
	for _, name := range slices.Sorted(maps.Keys(expiredDeletions)) {
		t.Run(name, func(t *testing.T) { checkDeleteExpired(t, expiredDeletions[name]) })
	}
}

func checkDeleteExpired(t *testing.T, del func(b storage.Batch, keys [][]byte, at int64) error) {
	clk := clock.NewManual(time.Unix(1000, 0))
	cache := rescache.New(1<<20, clk)
	cache.SetPolicy(rescache.Policy{
		Admit:       func([]byte) bool { return true },
		EqualityLen: func(key []byte) (int, bool) { return 2, len(key) >= 2 },
		ExpiresAt: func(_, v []byte) (int64, bool) {
			at, err := strconv.ParseInt(strings.TrimPrefix(string(v), "exp:"), 10, 64)
			return at, err == nil
		},
	})
	s := openT(t, Options{Dir: t.TempDir(), Resident: cache})
	defer s.Close()
	at := clk.Now().Add(10 * time.Second).UnixNano()
	expiring := "exp:" + strconv.FormatInt(at, 10)
	for _, k := range []string{"dk1", "dk2"} {
		if err := commitKV(s, k, expiring); err != nil {
			t.Fatal(err)
		}
	}
	deleteExpired := func() (invalidations int64) {
		t.Helper()
		readAll(t, s) // the cache holds dk1 and the range dk
		before := cache.Stats().Invalidations
		b := s.NewBatch()
		if err := del(b, [][]byte{[]byte("dk1"), []byte("dk2")}, at); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		snap := s.NewSnapshot()
		defer snap.Close()
		if got, want := readAll(t, s), readAllFrom(t, snap); !reflect.DeepEqual(got, want) {
			t.Fatalf("through the cache %q, in storage %q", got, want)
		}
		return cache.Stats().Invalidations - before
	}
	// Not yet expired by the cache's clock: the values (dk2's installed
	// by its write) and the range go.
	if n := deleteExpired(); n != 3 {
		t.Fatalf("a deletion before the expiry dropped %d cached entries; want dk1, dk2 and the range", n)
	}
	for _, k := range []string{"dk1", "dk2"} {
		if err := commitKV(s, k, expiring); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(10 * time.Second) // expired ($lte), not yet swept
	readAll(t, s)
	if n := deleteExpired(); n != 1 {
		t.Fatalf("a deletion after the expiry dropped %d cached entries; want the range only", n)
	}
}

// countingClock counts its reads.
type countingClock struct {
	clock.Clock
	reads atomic.Int64
}

func (c *countingClock) Now() time.Time {
	c.reads.Add(1)
	return c.Clock.Now()
}

// TestDeleteExpiredReadsTheClockOnce: a commit's deletions of expired
// values read the cache's clock once between them, however many there
// are. A TTL pass commits thousands at a time, and on a virtual machine's
// clock a read per deletion cost as much as the rest of its upkeep.
func TestDeleteExpiredReadsTheClockOnce(t *testing.T) {
	clk := &countingClock{Clock: clock.NewManual(time.Unix(1000, 0))}
	cache := rescache.New(1<<20, clk)
	cache.SetPolicy(rescache.Policy{Admit: func([]byte) bool { return true }})
	s := openT(t, Options{Dir: t.TempDir(), Resident: cache})
	defer s.Close()
	at := clk.Now().UnixNano()
	clockReads := func(n int) int64 {
		t.Helper()
		b := s.NewBatch()
		for i := range n {
			if err := b.(storage.ExpiredDeleter).DeleteExpired([]byte("dk"+strconv.Itoa(i)), at); err != nil {
				t.Fatal(err)
			}
		}
		before := clk.reads.Load()
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		return clk.reads.Load() - before
	}
	if one, many := clockReads(1), clockReads(1000); one != 1 || many != 1 {
		t.Fatalf("commits of 1 and 1000 deletions of expired values read the clock %d and %d times; want once each", one, many)
	}
}

// TestSkipSpareInstalls: a commit that skips spare installs replaces the
// value the cache held and leaves every key and range it did not hold
// out of the cache (a later read of one misses and reads storage), where
// the same commit without it installs them in the cache's spare room.
func TestSkipSpareInstalls(t *testing.T) {
	for _, skip := range []bool{false, true} {
		cache := admitAll()
		s := openT(t, Options{Dir: t.TempDir(), Resident: cache})
		if err := commitKV(s, "dk1", "old"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get([]byte("dk1")); err != nil { // the cache holds dk1
			t.Fatal(err)
		}
		b := s.NewBatch()
		if skip {
			b.(storage.SpareInstallSkipper).SkipSpareInstalls()
		}
		for _, kv := range [][2]string{{"dk1", "new"}, {"dk2", "two"}, {"dr1", "sole"}} {
			if err := b.Set([]byte(kv[0]), []byte(kv[1])); err != nil {
				t.Fatal(err)
			}
		}
		b.(storage.SoleEntryNoter).NoteSoleEntry([]byte("dr"), []byte("dr1"), []byte("sole"))
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			read func() (string, error)
			want string
			held bool // served by the cache
		}{
			{func() (string, error) { v, err := s.Get([]byte("dk1")); return string(v), err }, "new", true},
			{func() (string, error) { v, err := s.Get([]byte("dk2")); return string(v), err }, "two", !skip},
			{func() (string, error) { return firstOf(s, "dr", "ds") }, "dr1=sole", !skip},
		} {
			before := cache.Stats()
			got, err := c.read()
			if err != nil || got != c.want {
				t.Fatalf("skip %v: read %q, %v; want %q", skip, got, err, c.want)
			}
			after := cache.Stats()
			if hit := after.Hits > before.Hits; hit != c.held {
				t.Errorf("skip %v: %q served by the cache %v, want %v (%+v)", skip, c.want, hit, c.held, after)
			}
		}
		s.Close()
	}
}

// firstOf is the first entry of [lower, upper) as "key=value".
func firstOf(s *Store, lower, upper string) (string, error) {
	it, err := s.NewIter([]byte(lower), []byte(upper))
	if err != nil {
		return "", err
	}
	defer it.Close()
	if !it.First() {
		return "", it.Error()
	}
	return string(it.Key()) + "=" + string(it.Value()), nil
}

// TestResidentWriteSets holds the sets a commit's cache upkeep keeps to
// what they stand for, on both sides of their inline room: positions
// below and above 64, keys within and past the four compared in place.
func TestResidentWriteSets(t *testing.T) {
	var p positions
	in := []int{0, 5, 63, 64, 100, 1000}
	for _, pos := range in {
		p.add(pos)
	}
	for pos := 0; pos <= 1001; pos++ {
		if got, want := p.take(pos), slices.Contains(in, pos); got != want {
			t.Fatalf("position %d: taken %v, want %v", pos, got, want)
		}
	}
	var k installedKeys
	for i := range 9 {
		k.add([]byte{byte(i), 'k'})
	}
	for i := range 12 {
		if got, want := k.has([]byte{byte(i), 'k'}), i < 9; got != want {
			t.Fatalf("key %d: held %v, want %v", i, got, want)
		}
	}
}

// TestAppendGet: AppendGet reads what Get reads, after dst's bytes and
// in dst's room, from storage on a miss (which fills the cache with the
// value alone) and from the cache on a hit; a missing key is ErrNotFound.
func TestAppendGet(t *testing.T) {
	cache := admitAll()
	s := openT(t, Options{Dir: t.TempDir(), Resident: cache})
	defer s.Close()
	if err := commitKV(s, "dk1", "value"); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{"storage", "cache"} {
		room := make([]byte, 2, 16)
		copy(room, "ab")
		got, err := s.AppendGet(room, []byte("dk1"))
		if err != nil || string(got) != "abvalue" || &got[0] != &room[0] {
			t.Errorf("from %s: %q, %v; want abvalue in dst's room", from, got, err)
		}
		if v, err := s.Get([]byte("dk1")); err != nil || string(v) != "value" {
			t.Errorf("Get after AppendGet from %s: %q, %v", from, v, err)
		}
	}
	if st := cache.Stats(); st.Hits == 0 {
		t.Errorf("no read was served by the cache: %+v", st)
	}
	if _, err := s.AppendGet(nil, []byte("dk9")); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("missing key: %v, want ErrNotFound", err)
	}
}
