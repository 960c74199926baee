package pebblestore

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/internal/storage"
)

// countingRuns is a RunDeleter that counts its range deletions.
type countingRuns struct {
	storage.RunDeleter
	runs [][]string
}

func (c *countingRuns) DeleteRun(keys [][]byte) error {
	var run []string
	for _, k := range keys {
		run = append(run, string(k))
	}
	c.runs = append(c.runs, run)
	return c.RunDeleter.DeleteRun(keys)
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
	}{
		{"one run", "a k1 k2 k3 k4 z", "k1 k2 k3 k4", []string{"k1 k2 k3 k4"}},
		{"a stored key inside splits it", "k1 k2 k3 k3x k4 k5 k6", "k1 k2 k3 k4 k5 k6", []string{"k1 k2 k3", "k4 k5 k6"}},
		{"the successor of the last is kept", "k1 k2 k3 k3\x00", "k1 k2 k3", []string{"k1 k2 k3"}},
		{"a key longer than the last is kept", "k1 k2 k3 k3a", "k1 k2 k3", []string{"k1 k2 k3"}},
		{"short runs go one by one", "k1 k2 k2x k3 k4 k4x k5", "k1 k2 k3 k4 k5", nil},
		{"fewer than minRun keys", "k1 k2", "k1 k2", nil},
		{"absent keys join a run", "k1 k3 k5", "k1 k2 k3 k4 k5", []string{"k1 k2 k3 k4 k5"}},
		{"a stored key first", "k0 k1 k2 k3", "k1 k2 k3", []string{"k1 k2 k3"}},
		{"a run after a split by several keys", "k1 k2 x1 x2 x3 y1 y2 y3", "k1 k2 y1 y2 y3", []string{"y1 y2 y3"}},
		{"nothing stored", "", "k1 k2 k3", []string{"k1 k2 k3"}},
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
			err = storage.DeleteRuns(it, runs, keys, minRun, func(i int) error {
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
