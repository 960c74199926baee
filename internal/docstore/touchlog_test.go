package docstore

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
	"github.com/mayflydb/mayfly/internal/storage/storagetest"
)

// touchStore opens a store on fs with the write-behind on (a window
// that never passes in a test: flushes happen when a snapshot is taken)
// and a session collection: a token index and an appending TTL index
// on t.
func touchStore(t *testing.T, fs vfs.FS, clk clock.Clock) (*Store, storage.Engine, *Collection) {
	t.Helper()
	resident := rescache.New(1<<20, clk)
	eng, err := pebblestore.Open(pebblestore.Options{Dir: "db", FS: fs, Resident: resident, WriteBehind: time.Hour, SyncInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	logged, err := changestream.NewEngine(eng, clk, changestream.NewSignal())
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(logged, Options{Clock: clk, Resident: resident})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Collection("db", "s")
	if c == nil {
		if c, err = s.CreateCollection("db", "s", CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: 1}}}, {Key: "name", Value: "token_1"}})
		mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 86400}})
	}
	return s, eng, c
}

// session is a test document: t is last, so a touch changes its last
// eight bytes, and n is an int32, so a change of it keeps the length.
func session(id int, n int32, t int64) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: "token", Value: fmt.Sprintf("tok%03d", id)}, {Key: "n", Value: n}, {Key: "t", Value: bson.DateTime(t)}}
}

// patchesStart is where the write-behind's patches start: after its
// mark.
var patchesStart = []byte{byte(keyspace.Patch), byte(keyspace.Document)}

// touchState is a model state: each live document's n and t.
type touchState map[int][2]int64

func readTouchState(t *testing.T, c *Collection) touchState {
	t.Helper()
	got := touchState{}
	for _, d := range readAll(t, c) {
		got[int(field(d, "_id").(int32))] = [2]int64{int64(field(d, "n").(int32)), int64(field(d, "t").(bson.DateTime))}
	}
	return got
}

// patchCount counts the write-behind's keys in storage from lower: its
// patches, and its mark before them.
func patchCount(t *testing.T, eng storage.Engine, lower []byte) int {
	t.Helper()
	return storagetest.CountKeys(t, eng, lower, keyspace.Patch.End())
}

// TestTouchLogCrashImages: touches held back with their TTL entry as
// their only log, mixed with writes logged by patches (n changes),
// dates moved earlier, deletions and flushes, some synced; crash images
// at random unsynced shares recover, once the repair has run at open, to
// a state from the last synced write onward, by a scan and by token.
func TestTouchLogCrashImages(t *testing.T) {
	const seeds, docs, ops = 30, 12, 120
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			clk := clock.NewManual(t0)
			mem := vfs.NewCrashableMem()
			s, eng, c := touchStore(t, mem, clk)
			m := touchState{}
			for id := range docs {
				insert(t, c, session(id, 0, t0.UnixMilli()))
				m[id] = [2]int64{0, t0.UnixMilli()}
			}
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			states, synced := []touchState{maps.Clone(m)}, 0
			crashAt, crashFrom, crashTo := rng.IntN(ops), 0, 0
			var crashed vfs.FS
			held := false // a touch was held back with no patch
			for i := range ops {
				if i == crashAt {
					crashed = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
					crashFrom, crashTo = synced, len(states)-1
				}
				sync := touchOp(t, rng, eng, c, m)
				states = append(states, maps.Clone(m))
				if sync {
					synced = len(states) - 1
				}
				if st, _ := s.ResidentStats(); st.PendingItems > 0 && patchCount(t, eng, patchesStart) == 0 {
					held = true
				}
				if got := readTouchState(t, c); !maps.Equal(got, m) {
					t.Fatalf("op %d: read %v, model %v", i, got, m)
				}
			}
			if !held {
				t.Fatal("no touch was held back without a patch")
			}
			if err := eng.Close(); err != nil {
				t.Fatal(err)
			}
			checkTouchRecovered(t, crashed, states, crashFrom, crashTo)
			// A clean close leaves the last state, and no mark.
			checkTouchRecovered(t, mem, states, len(states)-1, len(states)-1)
		})
	}
}

// touchOp makes one random change of m's documents through c, and
// reports whether it was synced.
func touchOp(t *testing.T, rng *rand.Rand, eng storage.Engine, c *Collection, m touchState) bool {
	t.Helper()
	id := rng.IntN(len(m) + 2) // sometimes a document deleted before
	cur, live := m[id]
	sync := rng.IntN(4) == 0
	var next bson.D
	switch op := rng.IntN(10); {
	case op == 0:
		snap := eng.NewSnapshot() // flushes what is pending
		_ = snap.Close()
		return false
	case !live && op > 7:
		return false
	case !live:
		next = session(id, 0, t0.UnixMilli()+rng.Int64N(1000))
	case op <= 5: // a touch: t later
		next = session(id, int32(cur[0]), cur[1]+1+rng.Int64N(60_000))
	case op == 6: // n changes: a patch
		next = session(id, int32(cur[0])+1, cur[1])
	case op == 7: // t earlier
		next = session(id, int32(cur[0]), cur[1]-1-rng.Int64N(1000))
	default:
		next = nil
	}
	var err error
	if live {
		_, err = c.Modify(id, WriteOptions{Sync: sync}, func(doc bson.D) (Change, error) {
			if next == nil {
				return Change{Kind: Remove}, nil
			}
			return Change{Kind: Replace, Doc: next}, nil
		})
	} else {
		var d bson.D
		if d, err = PrepareInsert(next); err == nil {
			err = c.Insert(d, WriteOptions{Sync: sync})
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if next == nil {
		delete(m, id)
	} else {
		m[id] = [2]int64{int64(field(next, "n").(int32)), int64(field(next, "t").(bson.DateTime))}
	}
	return sync
}

// checkTouchRecovered opens fs and checks that it holds one of
// states[from..to], by a scan and by each document's token.
func checkTouchRecovered(t *testing.T, fs vfs.FS, states []touchState, from, to int) {
	t.Helper()
	clk := clock.NewManual(t0)
	s, eng, c := touchStore(t, fs, clk)
	defer eng.Close()
	got := readTouchState(t, c)
	for i := from; i <= to; i++ {
		if maps.Equal(got, states[i]) {
			for id, v := range got {
				d, err := c.FindOne(bson.D{{Key: "token", Value: fmt.Sprintf("tok%03d", id)}})
				if err != nil || d == nil || int64(field(d, "t").(bson.DateTime)) != v[1] {
					t.Fatalf("by token, document %d: %v, %v; want t %d", id, d, err, v[1])
				}
			}
			if n := patchCount(t, eng, keyspace.Patch.Start()); n != 0 {
				t.Fatalf("after the open: %d patches or marks left", n)
			}
			_ = s
			return
		}
	}
	t.Fatalf("recovered %v, which is none of states %d..%d (first %v, last %v)", got, from, to, states[from], states[to])
}

// field is doc's top-level field name, nil when it has none.
func field(doc bson.D, name string) any {
	for _, e := range doc {
		if e.Key == name {
			return e.Value
		}
	}
	return nil
}
