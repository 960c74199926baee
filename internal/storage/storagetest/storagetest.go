// Package storagetest is the conformance suite every storage.Engine must
// pass, plus shared benchmarks, so that engines are interchangeable.
package storagetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/storage"
)

// Run runs the conformance suite. open must return a fresh, empty engine;
// the suite closes it.
func Run(t *testing.T, open func(t *testing.T) storage.Engine) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, storage.Engine)
	}{
		{"GetSetDelete", testGetSetDelete},
		{"KeysAndValuesAreCopied", testCopies},
		{"BatchAtomicity", testBatchAtomicity},
		{"BatchAppliesInOrder", testBatchOrder},
		{"BatchAtomicUnderConcurrency", testBatchConcurrency},
		{"DeleteRange", testDeleteRange},
		{"IteratorOrderAndBounds", testIteratorBounds},
		{"IteratorSeekAndPrev", testIteratorSeek},
		{"IteratorIsConsistent", testIteratorConsistent},
		{"SnapshotIsolation", testSnapshot},
		{"Sync", testSync},
		{"Metrics", testMetrics},
		{"Close", testClose},
		{"CloseWhileBusy", testCloseWhileBusy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := open(t)
			t.Cleanup(func() {
				if err := e.Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, e)
		})
	}
}

// commit applies sets (key, value pairs; a nil value deletes) in one batch.
func commit(t testing.TB, e storage.Engine, sync bool, kv ...string) {
	t.Helper()
	b := e.NewBatch()
	defer b.Close()
	for i := 0; i+1 < len(kv); i += 2 {
		if err := b.Set([]byte(kv[i]), []byte(kv[i+1])); err != nil {
			t.Fatalf("Set: %v", err)
		}
	}
	if err := b.Commit(sync); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func del(t testing.TB, e storage.Engine, keys ...string) {
	t.Helper()
	b := e.NewBatch()
	defer b.Close()
	for _, k := range keys {
		if err := b.Delete([]byte(k)); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	if err := b.Commit(false); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func wantValue(t testing.TB, r storage.Reader, key, want string) {
	t.Helper()
	got, err := r.Get([]byte(key))
	if err != nil {
		t.Fatalf("Get(%q): %v, want %q", key, err, want)
	}
	if string(got) != want {
		t.Fatalf("Get(%q) = %q, want %q", key, got, want)
	}
}

func wantMissing(t testing.TB, r storage.Reader, key string) {
	t.Helper()
	if v, err := r.Get([]byte(key)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", key, v, err)
	}
}

// scan returns every key (and value) in [lower, upper), forwards.
func scan(t testing.TB, r storage.Reader, lower, upper []byte) []string {
	t.Helper()
	it, err := r.NewIter(lower, upper)
	if err != nil {
		t.Fatalf("NewIter: %v", err)
	}
	defer it.Close()
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Error(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	return out
}

// scanBack returns the keys in [lower, upper), backwards.
func scanBack(t testing.TB, r storage.Reader, lower, upper []byte) []string {
	t.Helper()
	it, err := r.NewIter(lower, upper)
	if err != nil {
		t.Fatalf("NewIter: %v", err)
	}
	defer it.Close()
	var out []string
	for ok := it.Last(); ok; ok = it.Prev() {
		out = append(out, string(it.Key()))
	}
	return out
}

func testGetSetDelete(t *testing.T, e storage.Engine) {
	wantMissing(t, e, "a")
	commit(t, e, false, "a", "1")
	wantValue(t, e, "a", "1")
	commit(t, e, false, "a", "2")
	wantValue(t, e, "a", "2")
	del(t, e, "a")
	wantMissing(t, e, "a")
	del(t, e, "never-set") // deleting a missing key is not an error

	// Empty values are values, and keys are arbitrary bytes.
	commit(t, e, false, "empty", "", "\x00", "zero", "\xff\xff", "ff", "a\x00b", "nul")
	wantValue(t, e, "empty", "")
	wantValue(t, e, "\x00", "zero")
	wantValue(t, e, "\xff\xff", "ff")
	wantValue(t, e, "a\x00b", "nul")
	wantMissing(t, e, "a\x00")
}

func testCopies(t *testing.T, e storage.Engine) {
	key, val := []byte("key"), []byte("value")
	b := e.NewBatch()
	if err := b.Set(key, val); err != nil {
		t.Fatal(err)
	}
	copy(key, "XXX") // the batch must have copied both
	copy(val, "XXXXX")
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close after Commit: %v", err)
	}
	got, err := e.Get([]byte("key"))
	if err != nil || string(got) != "value" {
		t.Fatalf("Get = %q, %v; want \"value\"", got, err)
	}
	copy(got, "YYYYY") // Get returns a copy
	wantValue(t, e, "key", "value")
}

func testBatchAtomicity(t *testing.T, e storage.Engine) {
	b := e.NewBatch()
	defer b.Close()
	if b.Len() != 0 {
		t.Fatalf("empty batch Len = %d", b.Len())
	}
	for i := range 10 {
		if err := b.Set(fmt.Appendf(nil, "k%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if b.Len() <= 0 {
		t.Fatalf("Len = %d after writes", b.Len())
	}
	wantMissing(t, e, "k0") // nothing visible before Commit
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	if got := scan(t, e, nil, nil); len(got) != 10 {
		t.Fatalf("after commit: %d keys, want 10", len(got))
	}

	// A batch closed without Commit changes nothing.
	dropped := e.NewBatch()
	if err := dropped.Set([]byte("dropped"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := dropped.Close(); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, e, "dropped")
}

func testBatchOrder(t *testing.T, e storage.Engine) {
	commit(t, e, false, "a", "old", "b", "old", "c", "old")
	b := e.NewBatch()
	defer b.Close()
	must(t, b.Set([]byte("a"), []byte("1")))
	must(t, b.Set([]byte("a"), []byte("2"))) // last write wins
	must(t, b.Delete([]byte("b")))
	must(t, b.Set([]byte("b"), []byte("back"))) // set after delete survives
	must(t, b.Set([]byte("c"), []byte("gone")))
	must(t, b.Delete([]byte("c")))
	must(t, b.Commit(false))
	wantValue(t, e, "a", "2")
	wantValue(t, e, "b", "back")
	wantMissing(t, e, "c")
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testBatchConcurrency has a writer move ten keys together from one
// generation to the next while readers check they never see a mix.
func testBatchConcurrency(t *testing.T, e storage.Engine) {
	const keys, gens = 10, 200
	write := func(gen int) {
		b := e.NewBatch()
		defer b.Close()
		for k := range keys {
			must(t, b.Set(fmt.Appendf(nil, "k%02d", k), fmt.Appendf(nil, "%06d", gen)))
		}
		must(t, b.Commit(false))
	}
	write(0)
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := checkOneGeneration(e, r%2 == 0); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for g := 1; g <= gens; g++ {
		write(g)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// checkOneGeneration reads all keys through an iterator (or a snapshot) and
// reports an error unless they all carry the same value.
func checkOneGeneration(e storage.Engine, viaSnapshot bool) error {
	var r storage.Reader = e
	if viaSnapshot {
		s := e.NewSnapshot()
		defer s.Close()
		r = s
	}
	it, err := r.NewIter(nil, nil)
	if err != nil {
		return err
	}
	defer it.Close()
	var first []byte
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if first == nil {
			first = append([]byte(nil), it.Value()...)
		} else if !bytes.Equal(first, it.Value()) {
			return fmt.Errorf("torn batch: %s=%s but first key had %s", it.Key(), it.Value(), first)
		}
		n++
	}
	if n != 10 {
		return fmt.Errorf("saw %d keys, want 10", n)
	}
	return it.Error()
}

func testDeleteRange(t *testing.T, e storage.Engine) {
	commit(t, e, false, "a", "1", "b", "2", "b\x00", "3", "c", "4", "d", "5")
	b := e.NewBatch()
	defer b.Close()
	must(t, b.DeleteRange([]byte("b"), []byte("d")))
	must(t, b.Set([]byte("c"), []byte("new")))       // a later Set in the batch survives
	must(t, b.DeleteRange([]byte("z"), []byte("a"))) // start >= end: nothing
	must(t, b.Commit(false))
	if got, want := fmt.Sprint(scan(t, e, nil, nil)), "[a=1 c=new d=5]"; got != want {
		t.Fatalf("after DeleteRange: %s, want %s", got, want)
	}
}

func testIteratorBounds(t *testing.T, e storage.Engine) {
	commit(t, e, false, "a", "1", "b", "2", "b\x00", "3", "ba", "4", "c", "5", "\xff", "6")
	for _, tc := range []struct {
		lower, upper []byte
		want         string
	}{
		{nil, nil, "[a=1 b=2 b\x00=3 ba=4 c=5 \xff=6]"},
		{[]byte("b"), []byte("c"), "[b=2 b\x00=3 ba=4]"},
		{[]byte("b\x00"), nil, "[b\x00=3 ba=4 c=5 \xff=6]"},
		{nil, []byte("b"), "[a=1]"},
		{[]byte("bb"), []byte("c"), "[]"},
		{[]byte("c"), []byte("b"), "[]"}, // inverted bounds: empty
	} {
		if got := fmt.Sprint(scan(t, e, tc.lower, tc.upper)); got != tc.want {
			t.Errorf("[%q, %q): got %q, want %q", tc.lower, tc.upper, got, tc.want)
		}
	}
	if got, want := fmt.Sprint(scanBack(t, e, []byte("a\x00"), []byte("c"))), "[ba b\x00 b]"; got != want {
		t.Errorf("backwards: got %q, want %q", got, want)
	}
}

func testIteratorSeek(t *testing.T, e storage.Engine) {
	commit(t, e, false, "b", "1", "d", "2", "f", "3", "h", "4")
	it, err := e.NewIter([]byte("c"), []byte("g"))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	key := func() string { return string(it.Key()) }
	check := func(name string, ok bool, want string) {
		t.Helper()
		if ok != (want != "") || key() != want || it.Valid() != ok {
			t.Fatalf("%s: ok=%v valid=%v key=%q, want %q", name, ok, it.Valid(), key(), want)
		}
	}
	check("SeekGE(e)", it.SeekGE([]byte("e")), "f")
	check("Prev", it.Prev(), "d")
	check("Prev at lower bound", it.Prev(), "")
	check("Next after falling off the start", it.Next(), "d")
	check("SeekGE(a) clamps to lower", it.SeekGE([]byte("a")), "d")
	check("SeekLT(z) clamps to upper", it.SeekLT([]byte("z")), "f")
	check("Next at upper bound", it.Next(), "")
	check("Prev after falling off the end", it.Prev(), "f")
	check("SeekLT(d)", it.SeekLT([]byte("d")), "")
	check("SeekGE(g) past upper", it.SeekGE([]byte("g")), "")
	check("Last", it.Last(), "f")
	check("First", it.First(), "d")
	if string(it.Value()) != "2" {
		t.Fatalf("Value at d = %q", it.Value())
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
}

// testIteratorConsistent: an iterator reads the state as of its creation
// (the Reader contract's consistent view).
func testIteratorConsistent(t *testing.T, e storage.Engine) {
	commit(t, e, false, "a", "1", "b", "2")
	it, err := e.NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	commit(t, e, false, "a", "changed", "c", "3")
	del(t, e, "b")
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	if fmt.Sprint(got) != "[a=1 b=2]" {
		t.Fatalf("iterator saw %v, want its creation-time view [a=1 b=2]", got)
	}
}

func testSnapshot(t *testing.T, e storage.Engine) {
	commit(t, e, false, "a", "1", "b", "2")
	s := e.NewSnapshot()
	commit(t, e, false, "a", "changed", "c", "3")
	del(t, e, "b")

	wantValue(t, s, "a", "1")
	wantValue(t, s, "b", "2")
	wantMissing(t, s, "c")
	if got := fmt.Sprint(scan(t, s, nil, nil)); got != "[a=1 b=2]" {
		t.Fatalf("snapshot scan: %s", got)
	}
	wantValue(t, e, "a", "changed")
	wantMissing(t, e, "b")

	// An iterator taken from the snapshot outlives the snapshot's Close.
	it, err := s.NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !it.First() || string(it.Value()) != "1" {
		t.Fatalf("snapshot iterator after snapshot Close: %q", it.Value())
	}
	if _, err := s.Get([]byte("a")); err == nil {
		t.Fatal("Get on a closed snapshot succeeded")
	}
}

func testSync(t *testing.T, e storage.Engine) {
	commit(t, e, false, "unsynced", "1")
	must(t, e.Sync())
	wantValue(t, e, "unsynced", "1")

	// Concurrent sync commits all succeed and are all visible.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				b := e.NewBatch()
				_ = b.Set(fmt.Appendf(nil, "g%02d-%02d", g, i), []byte("v"))
				if err := b.Commit(true); err != nil {
					errs <- err
				}
				_ = b.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := len(scan(t, e, []byte("g"), []byte("h"))); n != 16*20 {
		t.Fatalf("%d keys after concurrent sync commits, want %d", n, 16*20)
	}
}

func testMetrics(t *testing.T, e storage.Engine) {
	for i := range 100 {
		commit(t, e, false, fmt.Sprintf("k%03d", i), "some value")
	}
	m := e.Metrics()
	if m.DiskBytes < 0 || m.MemBytes < 0 {
		t.Fatalf("negative metrics: %+v", m)
	}
}

func testClose(t *testing.T, e storage.Engine) {
	commit(t, e, false, "a", "1")
	it, err := e.NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := e.NewSnapshot()
	pending := e.NewBatch()
	must(t, pending.Set([]byte("b"), []byte("2")))

	must(t, e.Close())

	checkClosed := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, storage.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", what, err)
		}
	}
	_, err = e.Get([]byte("a"))
	checkClosed("Get", err)
	_, err = e.NewIter(nil, nil)
	checkClosed("NewIter", err)
	checkClosed("Sync", e.Sync())
	checkClosed("Commit of a batch made before Close", pending.Commit(true))
	nb := e.NewBatch()
	if err := nb.Set([]byte("c"), []byte("3")); err == nil {
		checkClosed("Commit of a batch made after Close", nb.Commit(false))
	} else {
		checkClosed("Set on a batch made after Close", err)
	}
	_, err = e.NewSnapshot().Get([]byte("a"))
	checkClosed("Get on a snapshot made after Close", err)
	_, err = snap.Get([]byte("a"))
	checkClosed("Get on a snapshot open at Close", err)
	checkClosed("second Close", e.Close())
	_ = e.Metrics() // must not panic

	// An iterator left open across Close stops; it must not crash.
	if it.First() || it.Valid() || it.Key() != nil {
		t.Error("iterator still positioned after engine Close")
	}
	checkClosed("iterator Error", it.Error())
	_ = it.Close()
	_ = snap.Close()
	_ = pending.Close()
	_ = nb.Close()
}

// testCloseWhileBusy closes the engine under concurrent readers and writers:
// each must stop with ErrClosed, and nothing may panic or hang.
func testCloseWhileBusy(t *testing.T, e storage.Engine) {
	commit(t, e, false, "a", "1", "b", "2", "c", "3")
	errs := make(chan error, 8)
	for g := range 8 {
		go func() { errs <- busyUntilClosed(e, g) }()
	}
	time.Sleep(20 * time.Millisecond)
	must(t, e.Close())
	for range 8 {
		select {
		case err := <-errs:
			if !errors.Is(err, storage.ErrClosed) {
				t.Errorf("worker stopped with %v, want ErrClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a worker hung after Close")
		}
	}
}

func busyUntilClosed(e storage.Engine, g int) error {
	for i := 0; ; i++ {
		if _, err := e.Get([]byte("a")); err != nil {
			return err
		}
		it, err := e.NewIter(nil, nil)
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			_ = it.Value()
		}
		err = it.Error()
		_ = it.Close()
		if err != nil {
			return err
		}
		b := e.NewBatch()
		err = b.Set(fmt.Appendf(nil, "w%d-%d", g, i), []byte("v"))
		if err == nil {
			err = b.Commit(i%16 == 0)
		}
		_ = b.Close()
		if err != nil {
			return err
		}
	}
}

// CountKeys counts r's keys in [lower, upper).
func CountKeys(t testing.TB, r storage.Reader, lower, upper []byte) int {
	t.Helper()
	it, err := r.NewIter(lower, upper)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return n
}
