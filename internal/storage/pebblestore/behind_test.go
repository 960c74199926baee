package pebblestore

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
	"github.com/mayflydb/mayfly/internal/storage/storagetest"
)

// behindEpoch is the test caches' clock at the start.
var behindEpoch = time.Unix(1000, 0)

// behindCache is a resident cache that admits every key, of maxBytes,
// on clk; a value starting with 'x' expires a second after behindEpoch.
func behindCache(maxBytes int64, clk clock.Clock) *rescache.Cache {
	c := rescache.New(maxBytes, clk)
	c.SetPolicy(rescache.Policy{
		Admit: func([]byte) bool { return true },
		ExpiresAt: func(_, v []byte) (int64, bool) {
			return behindEpoch.Add(time.Second).UnixNano(), len(v) > 0 && v[0] == 'x'
		},
	})
	return c
}

// behindModel is what a store written behind must show: the documents'
// values after each commit, in order.
type behindModel struct {
	docs   map[string][]byte
	states []map[string][]byte // after each commit; states[0] is empty
	synced int                 // the last state committed with sync
}

func docName(i int) string { return fmt.Sprintf("%cdoc%02d", keyspace.Document, i) }

// behindOp is one random write of the workload: a touch (a few bytes
// of a document changed in place), a rewrite of another length, a
// deletion (an expired document's too, a range's), or a batch of two writes of one document.
func behindOp(t *testing.T, s *Store, rng *rand.Rand, m *behindModel, expired bool) {
	t.Helper()
	key := docName(rng.IntN(12))
	b := s.NewBatch()
	defer b.Close()
	old, ok := m.docs[key]
	n := 1
	if rng.IntN(8) == 0 {
		n = 2 // the second write of the key in one batch
	}
	for range n {
		var err error
		switch r := rng.IntN(10); {
		case !ok || r == 0:
			first := byte('a' + rng.IntN(26))
			if rng.IntN(3) == 0 {
				first = 'x' // one that expires
			}
			v := bytes.Repeat([]byte{first}, 40+rng.IntN(40))
			err, m.docs[key], ok = b.Set([]byte(key), v), v, true
		case r == 1:
			err, ok = b.Delete([]byte(key)), false
			delete(m.docs, key)
		case r == 3 && rng.IntN(4) == 0: // a range of documents, as a drop deletes them
			lo, hi := docName(rng.IntN(12)), docName(rng.IntN(13))
			err = b.DeleteRange([]byte(lo), []byte(hi))
			for k := range m.docs {
				if lo <= k && k < hi {
					delete(m.docs, k)
				}
			}
			_, ok = m.docs[key]
		case r == 2 && expired && old[0] == 'x': // the TTL monitor's deletion
			err, ok = b.(storage.ExpiredDeleter).DeleteExpired([]byte(key), behindEpoch.Add(time.Second).UnixNano()), false
			delete(m.docs, key)
		default: // a touch: up to 8 bytes at one of two offsets
			v := bytes.Clone(old)
			off := []int{4, 20}[rng.IntN(2)]
			for i := range 1 + rng.IntN(8) {
				v[off+i] = byte(rng.Uint32())
			}
			err, m.docs[key] = b.Set([]byte(key), v), v
		}
		if err != nil {
			t.Fatal(err)
		}
		old = m.docs[key]
	}
	sync := rng.IntN(5) == 0
	if err := b.Commit(sync); err != nil {
		t.Fatal(err)
	}
	m.states = append(m.states, maps.Clone(m.docs))
	if sync {
		m.synced = len(m.states) - 1
	}
}

// readPaths are the store's reads of documents, each of which must see
// the versions held back: by Get and AppendGet (the cache), an iterator
// (pendingIter) and a snapshot's iterator (a flush first).
var readPaths = []string{"get", "appendGet", "iter", "snapshot"}

// readDocs reads every document by the read path named.
func readDocs(t *testing.T, s *Store, path string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	var r storage.Reader = s
	switch path {
	case "get", "appendGet":
		for i := range 12 {
			var v []byte
			var err error
			if path == "get" {
				v, err = s.Get([]byte(docName(i)))
			} else {
				v, err = s.AppendGet([]byte("prefix"), []byte(docName(i)))
				v = bytes.TrimPrefix(v, []byte("prefix"))
			}
			switch {
			case errors.Is(err, storage.ErrNotFound):
			case err != nil:
				t.Fatal(err)
			default:
				out[docName(i)] = v
			}
		}
		return out
	case "snapshot":
		snap := s.NewSnapshot()
		defer snap.Close()
		r = snap
	}
	it, err := r.NewIter([]byte{byte(keyspace.Document)}, []byte{byte(keyspace.Document) + 1})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		out[string(it.Key())] = bytes.Clone(it.Value())
	}
	return out
}

func sameDocs(a, b map[string][]byte) bool { return maps.EqualFunc(a, b, bytes.Equal) }

// patchKeys counts the store's patch records.
func patchKeys(t *testing.T, s *Store) int {
	t.Helper()
	return storagetest.CountKeys(t, s, patchKey(nil, keyspace.Document.Start()), patchKey(nil, keyspace.Document.End()))
}

// TestWriteBehindCrashImages: a random workload of touches, rewrites,
// deletions and flushes, over caches large and small (a small one
// evicts documents a touch meant to hold back), reads what the model
// says after every commit, by every read path (readPaths); crash images taken
// along the way recover, once the patches are replayed, to the state
// after one of the commits at or after the last synced one, with no
// patch left.
func TestWriteBehindCrashImages(t *testing.T) {
	held := 0
	for seed := range uint64(40) {
		cacheBytes := int64(1 << 20)
		if seed%4 == 3 {
			cacheBytes = 4 << 10 // about two documents a shard
		}
		t.Run(fmt.Sprintf("seed=%d/cache=%d", seed, cacheBytes), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			mem := vfs.NewCrashableMem()
			clk := clock.NewManual(behindEpoch)
			cache := behindCache(cacheBytes, clk)
			s := openT(t, Options{Dir: "db", FS: mem, SyncInterval: -1, Resident: cache, WriteBehind: time.Hour})
			m := &behindModel{docs: map[string][]byte{}, states: []map[string][]byte{{}}}
			ops := 100 + rng.IntN(200)
			crashAt := rng.IntN(ops)
			var crashed vfs.FS
			crashFrom, crashTo := 0, 0 // the states the image may hold
			for i := range ops {
				if i == ops/2 {
					clk.Advance(time.Hour) // the 'x' values expire, pending or not
				}
				behindOp(t, s, rng, m, i >= ops/2)
				held = max(held, int(cache.PendingItems()))
				path := readPaths[i%len(readPaths)]
				if got := readDocs(t, s, path); !sameDocs(got, m.docs) {
					t.Fatalf("after op %d: read %d documents by %s unlike the model's %d", i, len(got), path, len(m.docs))
				}
				if rng.IntN(25) == 0 {
					if err := s.flushBehind(); err != nil {
						t.Fatal(err)
					}
					if n := patchKeys(t, s); n != 0 || cache.PendingItems() != 0 {
						t.Fatalf("after a flush: %d patches, %d pending", n, cache.PendingItems())
					}
				}
				if i == crashAt {
					crashed = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
					crashFrom, crashTo, crashAt = m.synced, len(m.states)-1, -1
				}
			}
			last := len(m.states) - 1
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			checkRecovered(t, crashed, m.states, crashFrom, crashTo)
			// A close flushes: reopened, the store holds the last state.
			checkRecovered(t, mem, m.states, last, last)
		})
	}
	if held == 0 {
		t.Fatal("no document was ever held back: the test no longer exercises the write-behind")
	}
}

// checkRecovered opens fs and checks it holds one of states[from..to]
// and no patch.
func checkRecovered(t *testing.T, fs vfs.FS, states []map[string][]byte, from, to int) {
	t.Helper()
	r := openT(t, Options{Dir: "db", FS: fs, SyncInterval: -1, Resident: behindCache(1<<20, clock.Real{}), WriteBehind: time.Hour})
	defer r.Close()
	got := readDocs(t, r, "iter")
	if n := patchKeys(t, r); n != 0 {
		t.Fatalf("%d patches left after the replay", n)
	}
	if !slices.ContainsFunc(states[min(from, to):to+1], func(st map[string][]byte) bool { return sameDocs(st, got) }) {
		t.Fatalf("recovered %d documents, matching no state from commit %d to %d", len(got), from, to)
	}
}

// TestExpiredDeletionEndsAPendingValue: the monitor's deletion of a
// document held back pending, once its expiry has passed, leaves no
// value served, whether the value is still pending at the apply or a
// flush settled it between the batch and its commit.
func TestExpiredDeletionEndsAPendingValue(t *testing.T) {
	for _, flushed := range []bool{false, true} {
		t.Run(fmt.Sprintf("flushed=%v", flushed), func(t *testing.T) {
			clk := clock.NewManual(behindEpoch)
			s := openT(t, Options{Dir: "db", FS: vfs.NewMem(), SyncInterval: -1, Resident: behindCache(1<<20, clk), WriteBehind: time.Hour})
			doc := docName(1)
			if err := set(t, s, false, doc, "xaaaaaaa"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get([]byte(doc)); err != nil { // now held by the cache
				t.Fatal(err)
			}
			if err := set(t, s, false, doc, "xaaaaaab"); err != nil {
				t.Fatal(err)
			}
			if pending, _ := s.resident.IsPending([]byte(doc)); !pending {
				t.Fatal("the touch was not held back")
			}
			clk.Advance(2 * time.Second) // past the value's expiry
			b := s.NewBatch()
			defer b.Close()
			if err := b.(storage.ExpiredDeleter).DeleteExpired([]byte(doc), behindEpoch.Add(time.Second).UnixNano()); err != nil {
				t.Fatal(err)
			}
			if flushed {
				if err := s.flushBehind(); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Commit(false); err != nil {
				t.Fatal(err)
			}
			if v, err := s.Get([]byte(doc)); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("after the deletion: %q, %v", v, err)
			}
			if n := s.resident.PendingItems(); n != 0 || patchKeys(t, s) != 0 {
				t.Fatalf("after the deletion: %d pending, %d patches", n, patchKeys(t, s))
			}
		})
	}
}
