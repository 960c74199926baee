package pebblestore

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore/faultfs"
)

// setTouch commits key=value by SetTouch, synced, beside the key that
// stands for its log (a TTL entry, in a store of documents).
func setTouch(t *testing.T, s *Store, key, value string) {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	if err := b.(storage.TouchSetter).SetTouch([]byte(key), []byte(value)); err != nil {
		t.Fatal(err)
	}
	if err := b.Set([]byte("i"+key), []byte(value)); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
}

// countingRepair is a TouchRepair that sets key to value, counting its
// runs.
func countingRepair(runs *atomic.Int64, key, value string) storage.TouchRepair {
	return func(r storage.Reader, set func(k, v []byte) error) error {
		runs.Add(1)
		return set([]byte(key), []byte(value))
	}
}

// TestTouchesHeldBackOnlyWithARepair: SetTouch holds a touch back with
// no patch, and sets the mark, only once a repair is registered; a
// reopen after a crash runs the repair, and a clean close that flushed
// leaves neither mark nor repair.
func TestTouchesHeldBackOnlyWithARepair(t *testing.T) {
	doc := docName(1)
	mem := vfs.NewCrashableMem()
	clk := clock.NewManual(behindEpoch)
	open := func(fs vfs.FS) *Store {
		return openT(t, Options{Dir: "db", FS: fs, Resident: behindCache(1<<20, clk), WriteBehind: time.Hour, SyncInterval: -1})
	}
	s := open(mem)
	if err := set(t, s, true, doc, "aaaaaaaa"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get([]byte(doc)); err != nil { // now held by the cache
		t.Fatal(err)
	}
	setTouch(t, s, doc, "aaaaaaab")
	// With no repair, SetTouch is Set: held back logged by a patch.
	if n := patchKeys(t, s); n != 1 || s.touchLog.Load() {
		t.Fatalf("with no repair registered: %d patches, mark %v", n, s.touchLog.Load())
	}
	var runs atomic.Int64
	if err := s.RepairTouches(countingRepair(&runs, doc, "repaired")); err != nil || runs.Load() != 0 {
		t.Fatalf("registering on a store with no mark: %v, %d runs", err, runs.Load())
	}
	setTouch(t, s, doc, "aaaaaaac")
	if err := s.flushBehind(); err != nil {
		t.Fatal(err)
	}
	setTouch(t, s, doc, "aaaaaaad")
	if n := s.resident.PendingItems(); n != 1 || !s.touchLog.Load() || patchKeys(t, s) != 0 {
		t.Fatalf("held back: %d pending, mark %v, %d patches", n, s.touchLog.Load(), patchKeys(t, s))
	}
	if v, err := s.Get([]byte(doc)); err != nil || string(v) != "aaaaaaad" {
		t.Fatalf("read %q, %v", v, err)
	}
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The crash image: the mark is there and the document is not
	// written; the repair runs when registered, and deletes the mark.
	r := open(crashed)
	if !r.touchLog.Load() {
		t.Fatal("the crash image has no mark")
	}
	if v, _ := r.Get([]byte(doc)); string(v) != "aaaaaaac" {
		t.Fatalf("before the repair: %q (the flushed version)", v)
	}
	if err := r.RepairTouches(countingRepair(&runs, doc, "repaired")); err != nil || runs.Load() != 1 {
		t.Fatalf("repair at open: %v, %d runs", err, runs.Load())
	}
	if v, _ := r.Get([]byte(doc)); string(v) != "repaired" || r.touchLog.Load() {
		t.Fatalf("after the repair: %q, mark %v", v, r.touchLog.Load())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	// A clean close flushed the touch and deleted the mark.
	c := open(mem)
	defer c.Close()
	if v, _ := c.Get([]byte(doc)); string(v) != "aaaaaaad" || c.touchLog.Load() {
		t.Fatalf("after a clean close: %q, mark %v", v, c.touchLog.Load())
	}
}

// TestRecoveryReopenRepairsTouches: a store whose writes failed reopens
// itself, and the touches its cache held back with no patch are
// restored by the registered repair before writes are taken again.
func TestRecoveryReopenRepairsTouches(t *testing.T) {
	full := &faultfs.DiskFull{}
	clk := clock.NewManual(behindEpoch)
	s := openT(t, Options{Dir: "db", FS: faultfs.Wrap(vfs.NewMem(), full), Resident: behindCache(1<<20, clk),
		WriteBehind: time.Hour, RecoverInterval: testRecoverInterval})
	defer s.Close()
	doc := docName(2)
	var runs atomic.Int64
	restored := []byte("restored")
	err := s.RepairTouches(func(r storage.Reader, set func(k, v []byte) error) error {
		runs.Add(1)
		return set([]byte(doc), restored)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := set(t, s, true, doc, "aaaaaaaa"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	setTouch(t, s, doc, "aaaaaaab")
	before := s.reopens()
	failStore(t, s, full)
	full.Set(false)
	waitFor(t, "the reopen", func() bool { return s.reopens() > before && !s.down() && s.Writable() })
	if runs.Load() != 1 {
		t.Fatalf("the repair ran %d times at the reopen; want 1", runs.Load())
	}
	if v, err := s.Get([]byte(doc)); err != nil || !bytes.Equal(v, restored) || s.touchLog.Load() {
		t.Fatalf("after the reopen: %q, %v, mark %v", v, err, s.touchLog.Load())
	}
}
