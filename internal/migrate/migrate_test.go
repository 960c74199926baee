package migrate

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// TestAdvance: each phase may go exactly to the phases this table
// lists; a phase added without a row fails.
func TestAdvance(t *testing.T) {
	allowed := map[Phase][]Phase{
		PhaseClone:           {PhaseCatchUp, PhaseAborted},
		PhaseCatchUp:         {PhaseCriticalSection, PhaseAborted},
		PhaseCriticalSection: {PhaseCommitStarted, PhaseAborted},
		PhaseCommitStarted:   {PhaseCommitted, PhaseAborted},
		PhaseCommitted:       nil,
		PhaseAborted:         nil,
	}
	for _, from := range Phases() {
		want, ok := allowed[from]
		if !ok {
			t.Fatalf("phase %s has no row", from)
		}
		for _, to := range Phases() {
			err := Advance(from, to)
			if slices.Contains(want, to) != (err == nil) {
				t.Errorf("Advance(%s, %s) = %v", from, to, err)
			}
		}
		if from.Final() != (len(want) == 0) {
			t.Errorf("%s.Final() = %v", from, from.Final())
		}
	}
}

// TestRecover: what a new primary does with a recorded migration, for
// every phase and every outcome the config servers may show. Before the
// commit was sent it aborts whatever they say; after, only their chunks
// decide, and it waits without them.
func TestRecover(t *testing.T) {
	outcomes := []Outcome{OutcomeUnknown, OutcomeDonorOwns, OutcomeRecipientOwns}
	want := map[Phase][3]Action{
		PhaseClone:           {FinishAbort, FinishAbort, FinishAbort},
		PhaseCatchUp:         {FinishAbort, FinishAbort, FinishAbort},
		PhaseCriticalSection: {FinishAbort, FinishAbort, FinishAbort},
		PhaseCommitStarted:   {Wait, FinishAbort, FinishCommit},
		PhaseCommitted:       {FinishCommit, FinishCommit, FinishCommit},
		PhaseAborted:         {FinishAbort, FinishAbort, FinishAbort},
	}
	for _, p := range Phases() {
		row, ok := want[p]
		if !ok {
			t.Fatalf("phase %s has no row", p)
		}
		for i, o := range outcomes {
			if got := Recover(p, o); got != row[i] {
				t.Errorf("Recover(%s, %d) = %d, want %d", p, o, got, row[i])
			}
		}
	}
}

// layout makes n chunks of a {k: "hashed"} collection at random split
// points, each on a random one of shards, versions 1|0, 1|1, ….
func layout(rng *rand.Rand, n int, shards []string) []shardmeta.Chunk {
	points := map[int64]bool{}
	for len(points) < n-1 {
		points[rng.Int64()-rng.Int64()/2] = true
	}
	sorted := slices.Sorted(func(yield func(int64) bool) {
		for p := range points {
			if !yield(p) {
				return
			}
		}
	})
	bounds := []bson.D{{{Key: "k", Value: bson.MinKey{}}}}
	for _, p := range sorted {
		bounds = append(bounds, bson.D{{Key: "k", Value: p}})
	}
	bounds = append(bounds, bson.D{{Key: "k", Value: bson.MaxKey{}}})
	uuid := bson.Binary{Subtype: 4, Data: make([]byte, 16)}
	chunks := make([]shardmeta.Chunk, n)
	for i := range chunks {
		s := shards[rng.IntN(len(shards))]
		chunks[i] = shardmeta.Chunk{ID: bson.NewObjectID(), UUID: uuid, Min: bounds[i], Max: bounds[i+1], Shard: s,
			Lastmod: bson.Timestamp{T: 1, I: uint32(i)}, History: []shardmeta.ChunkHistory{{Shard: s}}}
	}
	return chunks
}

func table(t *testing.T, chunks []shardmeta.Chunk) *shardmeta.RoutingTable {
	t.Helper()
	coll := shardmeta.Collection{ID: "db.c", UUID: chunks[0].UUID, Key: bson.D{{Key: "k", Value: "hashed"}}}
	rt, err := shardmeta.NewRoutingTable(coll, chunks)
	if err != nil {
		t.Fatalf("chunks do not tile: %v", err)
	}
	return rt
}

// TestCommitMoveProperties: over random layouts and random sub-ranges
// of random chunks, a move leaves chunks that tile the key space, the
// range on the recipient alone, every other key where it was, both
// shards' versions raised above every earlier version, and no version
// twice.
func TestCommitMoveProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 39))
	shards := []string{"a", "b", "c"}
	for run := range 300 {
		chunks := layout(rng, 1+rng.IntN(8), shards)
		src := chunks[rng.IntN(len(chunks))]
		r := subRange(rng, src)
		to := shards[rng.IntN(len(shards))]
		if to == src.Shard {
			if _, err := CommitMove(chunks, Move{Range: r, Donor: src.Shard, Recipient: to}); !errors.Is(err, ErrSameShard) {
				t.Fatalf("run %d: a move to the owner: %v", run, err)
			}
			continue
		}
		out, err := CommitMove(chunks, Move{Range: r, Donor: src.Shard, Recipient: to, At: bson.Timestamp{T: 5}})
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		checkMove(t, run, chunks, out, r, src.Shard, to)
	}
}

// subRange is a random range inside c, sometimes c itself.
func subRange(rng *rand.Rand, c shardmeta.Chunk) Range {
	lo, hi, _ := hashBounds(c)
	if rng.IntN(3) == 0 || hi-lo < 4 {
		return Range{Min: c.Min, Max: c.Max}
	}
	a := lo + 1 + rng.Int64N((hi-lo)/2)
	b := a + 1 + rng.Int64N((hi-a)-1)
	r := Range{Min: bson.D{{Key: "k", Value: a}}, Max: bson.D{{Key: "k", Value: b}}}
	if rng.IntN(2) == 0 {
		r.Min = c.Min
	}
	return r
}

func checkMove(t *testing.T, run int, before, after []shardmeta.Chunk, r Range, donor, recipient string) {
	t.Helper()
	old, now := table(t, before), table(t, after)
	if OwnerOf(after, r) != recipient {
		t.Fatalf("run %d: %s is owned by %q after the move", run, r, OwnerOf(after, r))
	}
	for range 50 {
		h := rand.Int64() - rand.Int64()/2
		key := bson.D{{Key: "k", Value: h}}
		was, _ := old.ChunkForHash(h)
		is, _ := now.ChunkForHash(h)
		if !r.Contains(key) && was.Shard != is.Shard {
			t.Fatalf("run %d: key %d outside the range moved from %s to %s", run, h, was.Shard, is.Shard)
		}
	}
	top := maxVersion(before)
	seen := map[bson.Timestamp]bool{}
	for _, c := range after {
		if seen[c.Lastmod] {
			t.Fatalf("run %d: version %v twice", run, c.Lastmod)
		}
		seen[c.Lastmod] = true
	}
	if v := now.ShardVersion(recipient).Placement(); v.T != top.T+1 {
		t.Fatalf("run %d: the recipient's version %v is not above %v", run, v, top)
	}
	if v := now.ShardVersion(donor).Placement(); len(now.Chunks()) > 0 && slices.ContainsFunc(after, func(c shardmeta.Chunk) bool { return c.Shard == donor }) && v.T != top.T+1 {
		t.Fatalf("run %d: the donor's version %v did not rise above %v", run, v, top)
	}
}

// TestCommitMoveRefusals: what a move cannot do.
func TestCommitMoveRefusals(t *testing.T) {
	chunks := layout(rand.New(rand.NewPCG(1, 2)), 3, []string{"a"})
	chunks[1].Shard = "b"
	whole := Range{Min: chunks[0].Min, Max: chunks[0].Max}
	span := Range{Min: chunks[0].Min, Max: chunks[1].Max}
	cases := []struct {
		name string
		move Move
		want error
	}{
		{"not the donor's", Move{Range: whole, Donor: "b", Recipient: "c"}, ErrNotOwner},
		{"already there", Move{Range: whole, Donor: "b", Recipient: "a"}, ErrSameShard},
		{"spans two chunks", Move{Range: span, Donor: "a", Recipient: "b"}, ErrNoChunk},
		{"empty", Move{Range: Range{Min: chunks[0].Max, Max: chunks[0].Max}, Donor: "a", Recipient: "b"}, ErrEmptyRange},
	}
	for _, tc := range cases {
		if _, err := CommitMove(chunks, tc.move); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestSplitAndDiff: splits add one chunk per point with rising, unique
// versions; a point on a bound is refused; Diff names exactly the new
// and changed chunks.
func TestSplitAndDiff(t *testing.T) {
	chunks := layout(rand.New(rand.NewPCG(3, 4)), 2, []string{"a", "b"})
	mid, _ := Midpoint(chunks[0], "k")
	out, err := Split(chunks, []bson.D{mid}, nil)
	if err != nil || len(out) != 3 {
		t.Fatalf("split: %d chunks, %v", len(out), err)
	}
	table(t, out)
	if out[0].Lastmod == out[1].Lastmod || !later(out[1].Lastmod, maxVersion(chunks)) {
		t.Fatalf("split versions %v, %v after %v", out[0].Lastmod, out[1].Lastmod, maxVersion(chunks))
	}
	if _, err := Split(out, []bson.D{mid}, nil); !errors.Is(err, ErrBadSplit) {
		t.Fatalf("split on a bound: %v", err)
	}
	write, remove := Diff(chunks, out)
	if len(write) != 2 || len(remove) != 0 {
		t.Fatalf("Diff: write %d, remove %d", len(write), len(remove))
	}
	if write, remove := Diff(out, chunks); len(write) != 1 || len(remove) != 1 {
		t.Fatalf("Diff back: write %d, remove %d", len(write), len(remove))
	}
}

func later(a, b bson.Timestamp) bool { return a.T > b.T || a.T == b.T && a.I > b.I }

// TestPlan: the balancer's choices, scenario by scenario.
func TestPlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	on := func(layoutShards ...string) []shardmeta.Chunk {
		chunks := layout(rng, len(layoutShards), []string{"x"})
		for i, s := range layoutShards {
			chunks[i].Shard = s
		}
		return chunks
	}
	three := []ShardInfo{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	cases := []struct {
		name   string
		chunks []shardmeta.Chunk
		shards []ShardInfo
		busy   map[string]bool
		want   string // "" none, "split a", "move a->b"
	}{
		{"balanced", on("a", "b", "c"), three, nil, ""},
		{"new shard: split first", on("a", "b"), three, nil, "split a"},
		{"then move", on("a", "a", "b"), three, nil, "move a->c"},
		{"two apart", on("a", "a", "a", "b", "c"), three, nil, "move a->b"},
		{"draining shard gives its chunks", on("a", "b", "c"), []ShardInfo{{ID: "a"}, {ID: "b"}, {ID: "c", Draining: true}}, nil, "move c->a"},
		{"busy donor waits", on("a", "a", "a", "b", "c"), three, map[string]bool{"a": true}, ""},
		{"busy recipient: next least loaded", on("a", "a", "a", "a", "b", "c", "c"), three, map[string]bool{"b": true}, "move a->c"},
	}
	for _, tc := range cases {
		steps := Plan([]CollectionChunks{{Namespace: "db.c", HashedField: "k", Chunks: tc.chunks}}, tc.shards, tc.busy)
		got := ""
		if len(steps) == 1 {
			got = fmt.Sprintf("move %s->%s", steps[0].Donor, steps[0].Recipient)
			if steps[0].Split {
				got = "split " + steps[0].Donor
			}
		}
		if len(steps) > 1 || got != tc.want {
			t.Errorf("%s: %v, want %q", tc.name, steps, tc.want)
		}
	}
	noBalance := Plan([]CollectionChunks{{Namespace: "db.c", NoBalance: true, Chunks: on("a", "a", "a")}}, three, nil)
	if len(noBalance) != 0 {
		t.Errorf("noBalance collection planned: %v", noBalance)
	}
}

// TestPlanOneMigrationPerShard: however many collections need moves,
// one round gives each shard at most one step.
func TestPlanOneMigrationPerShard(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	shards := []ShardInfo{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}}
	for run := range 100 {
		var colls []CollectionChunks
		for i := range 1 + rng.IntN(6) {
			colls = append(colls, CollectionChunks{Namespace: fmt.Sprint("db.c", i), HashedField: "k",
				Chunks: layout(rng, 1+rng.IntN(9), []string{"a", "b", "c", "d"})})
		}
		used := map[string]int{}
		for _, s := range Plan(colls, shards, nil) {
			used[s.Donor]++
			if !s.Split {
				used[s.Recipient]++
			}
		}
		for s, n := range used {
			if n > 1 {
				t.Fatalf("run %d: shard %s in %d steps of one round", run, s, n)
			}
		}
	}
}

// TestInWindow: the active window, plain and across midnight.
func TestInWindow(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 1, 2, h, m, 0, 0, time.Local) }
	cases := []struct {
		w    *shardmeta.ActiveWindow
		now  time.Time
		want bool
	}{
		{nil, at(3, 0), true},
		{&shardmeta.ActiveWindow{Start: "01:00", Stop: "05:00"}, at(3, 0), true},
		{&shardmeta.ActiveWindow{Start: "01:00", Stop: "05:00"}, at(5, 0), false},
		{&shardmeta.ActiveWindow{Start: "23:00", Stop: "02:00"}, at(23, 30), true},
		{&shardmeta.ActiveWindow{Start: "23:00", Stop: "02:00"}, at(1, 59), true},
		{&shardmeta.ActiveWindow{Start: "23:00", Stop: "02:00"}, at(12, 0), false},
	}
	for _, tc := range cases {
		if got, err := InWindow(tc.w, tc.now); err != nil || got != tc.want {
			t.Errorf("InWindow(%v, %v) = %v, %v", tc.w, tc.now, got, err)
		}
	}
	if _, err := InWindow(&shardmeta.ActiveWindow{Start: "9am", Stop: "5pm"}, at(3, 0)); err == nil {
		t.Error("a malformed window was accepted")
	}
}
