package pebblestore

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/mayflydb/mayfly/internal/storage"
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
}

// notWrites are storage.Batch's methods that write nothing.
var notWrites = map[string]bool{"Commit": true, "Len": true, "Close": true}

func TestEveryBatchWriteKeepsTheCacheExact(t *testing.T) {
	batchType := reflect.TypeOf((*storage.Batch)(nil)).Elem()
	for i := range batchType.NumMethod() {
		name := batchType.Method(i).Name
		if _, ok := writeKinds[name]; !ok && !notWrites[name] {
			t.Errorf("storage.Batch.%s has no row in writeKinds", name)
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
