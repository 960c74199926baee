package pebblestore

import (
	"bytes"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/storage"
)

// countingRuns is a RunDeleter that counts its range deletions.
type countingRuns struct {
	storage.RunDeleter
	runs    [][]string
	expired []int64 // each run's expiredAt
}

func (c *countingRuns) DeleteRun(keys [][]byte, expiredAt int64) error {
	var run []string
	for _, k := range keys {
		run = append(run, string(k))
	}
	c.runs = append(c.runs, run)
	c.expired = append(c.expired, expiredAt)
	return c.RunDeleter.DeleteRun(keys, expiredAt)
}

// TestDeleteRuns: storage.DeleteRuns deletes exactly the keys it is
// given, as range deletions where they are every key stored between a
// run's ends, and one by one elsewhere; what else is stored stays.
func TestDeleteRuns(t *testing.T) {
	const minRun = 3
	cases := []struct {
		name     string
		stored   string // space-separated keys in storage
		del      string // the keys to delete
		wantRuns []string
		unknown  string // keys whose expiry is not known; the others' an hour on
	}{
		{"one run", "a k1 k2 k3 k4 z", "k1 k2 k3 k4", []string{"k1 k2 k3 k4"}, ""},
		{"a stored key inside splits it", "k1 k2 k3 k3x k4 k5 k6", "k1 k2 k3 k4 k5 k6", []string{"k1 k2 k3", "k4 k5 k6"}, ""},
		{"the successor of the last is kept", "k1 k2 k3 k3\x00", "k1 k2 k3", []string{"k1 k2 k3"}, ""},
		{"a key longer than the last is kept", "k1 k2 k3 k3a", "k1 k2 k3", []string{"k1 k2 k3"}, ""},
		{"short runs go one by one", "k1 k2 k2x k3 k4 k4x k5", "k1 k2 k3 k4 k5", nil, ""},
		{"fewer than minRun keys", "k1 k2", "k1 k2", nil, ""},
		{"absent keys join a run", "k1 k3 k5", "k1 k2 k3 k4 k5", []string{"k1 k2 k3 k4 k5"}, ""},
		{"a stored key first", "k0 k1 k2 k3", "k1 k2 k3", []string{"k1 k2 k3"}, ""},
		{"a run after a split by several keys", "k1 k2 x1 x2 x3 y1 y2 y3", "k1 k2 y1 y2 y3", []string{"y1 y2 y3"}, ""},
		{"nothing stored", "", "k1 k2 k3", []string{"k1 k2 k3"}, ""},
		{"a key of unknown expiry", "k1 k2 k3 k4", "k1 k2 k3 k4", []string{"k1 k2 k3 k4"}, "k3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openT(t, Options{InMemory: true, Resident: admitAll()})
			defer s.Close()
			for _, k := range strings.Fields(c.stored) {
				if err := commitKV(s, k, "v"); err != nil {
					t.Fatal(err)
				}
			}
			readStoredKeys(t, s) // the cache holds them
			keys := splitKeys(c.del)
			b := s.NewBatch()
			defer b.Close()
			runs := &countingRuns{RunDeleter: b.(storage.RunDeleter)}
			it, err := s.NewIter(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var points []string
			// Expiries the cache's clock has not reached: TestDeleteExpired
			// has runs of values it has seen expire.
			later := time.Now().Add(time.Hour).UnixNano()
			expiredAt := func(i int) int64 {
				if slices.Contains(strings.Fields(c.unknown), string(keys[i])) {
					return 0
				}
				return later + int64(len(keys)-i) // descending: a run goes at its first key's
			}
			ks := storage.RunKeys{Keys: keys, ExpiredAt: expiredAt}
			err = storage.DeleteRuns(it, runs, ks, minRun, func(i int) error {
				points = append(points, string(keys[i]))
				return b.Delete(keys[i])
			})
			it.Close()
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(false); err != nil {
				t.Fatal(err)
			}
			var gotRuns []string
			for _, r := range runs.runs {
				gotRuns = append(gotRuns, strings.Join(r, " "))
			}
			if !reflect.DeepEqual(gotRuns, c.wantRuns) {
				t.Errorf("runs %q, want %q", gotRuns, c.wantRuns)
			}
			checkRunExpiries(t, runs, keys, expiredAt)
			inRuns := strings.Fields(strings.Join(gotRuns, " "))
			if n := len(points) + len(inRuns); n != len(keys) {
				t.Errorf("%d keys deleted (%q as points), want %d", n, points, len(keys))
			}
			var want []string
			for _, k := range strings.Fields(c.stored) {
				if !slices.Contains(strings.Fields(c.del), k) {
					want = append(want, k)
				}
			}
			if got := readStoredKeys(t, s); !reflect.DeepEqual(got, want) {
				t.Errorf("left %q, want %q", got, want)
			}
		})
	}
}

// TestDeleteRunsConsecutive: keys the caller read one step apart go as
// one run without reading storage again; fewer than a run's still go one
// by one.
func TestDeleteRunsConsecutive(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		s := openT(t, Options{InMemory: true, Resident: admitAll()})
		var keys [][]byte
		for i := range n {
			keys = append(keys, []byte("k"+strconv.Itoa(i)))
			if err := commitKV(s, string(keys[i]), "v"); err != nil {
				t.Fatal(err)
			}
		}
		readStoredKeys(t, s)
		b := s.NewBatch()
		runs := &countingRuns{RunDeleter: b.(storage.RunDeleter)}
		inner, err := s.NewIter(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		it := &countingIter{Iterator: inner}
		ks := storage.RunKeys{Keys: keys, ExpiredAt: func(int) int64 { return 0 }, Consecutive: true}
		points := 0
		if err := storage.DeleteRuns(it, runs, ks, 3, func(i int) error { points++; return b.Delete(keys[i]) }); err != nil {
			t.Fatal(err)
		}
		it.Close()
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		b.Close()
		wantRuns, wantPoints := 1, 0
		if n < 3 {
			wantRuns, wantPoints = 0, n
		}
		if len(runs.runs) != wantRuns || points != wantPoints || it.moves != 0 {
			t.Errorf("%d keys: %d runs, %d points, %d iterator moves; want %d, %d, 0", n, len(runs.runs), points, it.moves, wantRuns, wantPoints)
		}
		if left := readStoredKeys(t, s); len(left) != 0 {
			t.Errorf("%d keys: left %q", n, left)
		}
		s.Close()
	}
}

// countingIter counts the moves of an iterator.
type countingIter struct {
	storage.Iterator
	moves int
}

func (it *countingIter) SeekGE(k []byte) bool { it.moves++; return it.Iterator.SeekGE(k) }
func (it *countingIter) Next() bool           { it.moves++; return it.Iterator.Next() }

// checkRunExpiries checks that each run went at the latest expiry of its
// keys, or at 0 where one's is not known.
func checkRunExpiries(t *testing.T, runs *countingRuns, keys [][]byte, expiredAt func(int) int64) {
	t.Helper()
	for r, run := range runs.runs {
		var want int64
		for _, k := range run {
			at := expiredAt(slices.IndexFunc(keys, func(x []byte) bool { return string(x) == k }))
			if at == 0 {
				want = 0
				break
			}
			want = max(want, at)
		}
		if runs.expired[r] != want {
			t.Errorf("run %q went at expiry %d, want %d", run, runs.expired[r], want)
		}
	}
}

func splitKeys(s string) [][]byte {
	var out [][]byte
	for _, k := range strings.Fields(s) {
		out = append(out, []byte(k))
	}
	return out
}

// readStoredKeys reads every key by Get, through the cache, and checks an
// iterator over storage agrees.
func readStoredKeys(t *testing.T, s *Store) []string {
	t.Helper()
	it, err := s.NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var keys []string
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, string(bytes.Clone(it.Key())))
	}
	for _, k := range []string{"a", "k0", "k1", "k2", "k3", "k3\x00", "k3a", "k3x", "k4", "k5", "k6", "x1", "y1", "z"} {
		_, err := s.Get([]byte(k))
		if found := err == nil; found != slices.Contains(keys, k) {
			t.Fatalf("Get(%q) through the cache: %v, but the iterator lists %q", k, err, keys)
		}
	}
	return keys
}
