package shardmeta

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/shardkey"
)

func hashedColl(t testing.TB) (Collection, *shardkey.Pattern) {
	uuid, err := NewUUID()
	if err != nil {
		t.Fatal(err)
	}
	key := bson.D{{Key: "k", Value: "hashed"}}
	p, err := shardkey.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	return Collection{ID: "app.c", Epoch: bson.NewObjectID(), Timestamp: ts(50, 1), UUID: uuid, Key: key}, p
}

func shardNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("sh%02d", i)
	}
	return names
}

func initial(t testing.TB, coll Collection, p *shardkey.Pattern, shards []string) []Chunk {
	chunks, err := HashedInitialChunks(InitialLayout{Pattern: p, UUID: coll.UUID, Epoch: coll.Epoch,
		ValidAfter: coll.Timestamp, Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	return chunks
}

// TestHashedSplitPoints: the split points 8.0 uses, against the bounds
// MongoDB clusters print for a hashed collection in four chunks
// (±4611686018427387902 and 0) and two (0), and the formula's symmetry
// and order for every count up to 64.
func TestHashedSplitPoints(t *testing.T) {
	if got := HashedSplitPoints(4); !slices.Equal(got, []int64{-4611686018427387902, 0, 4611686018427387902}) {
		t.Errorf("4 chunks: %v", got)
	}
	if got := HashedSplitPoints(2); !slices.Equal(got, []int64{0}) {
		t.Errorf("2 chunks: %v", got)
	}
	if got := HashedSplitPoints(1); len(got) != 0 {
		t.Errorf("1 chunk: %v", got)
	}
	for n := 2; n <= 64; n++ {
		pts := HashedSplitPoints(n)
		if len(pts) != n-1 || !slices.IsSorted(pts) {
			t.Fatalf("%d chunks: %v", n, pts)
		}
		for i := range pts {
			if pts[i] != -pts[len(pts)-1-i] {
				t.Fatalf("%d chunks: not symmetric around 0: %v", n, pts)
			}
		}
	}
}

// TestHashedInitialChunks: one chunk per shard in the given order, 8.0's
// versions (1|0, 1|1, … in key order) and history, and a routing table
// that accepts them.
func TestHashedInitialChunks(t *testing.T) {
	coll, p := hashedColl(t)
	shards := []string{"b", "a", "c", "d"}
	chunks := initial(t, coll, p, shards)
	for i, c := range chunks {
		if c.Shard != shards[i] || c.Lastmod != ts(1, uint32(i)) || c.OnCurrentShardSince != coll.Timestamp ||
			len(c.History) != 1 || c.History[0] != (ChunkHistory{coll.Timestamp, shards[i]}) {
			t.Errorf("chunk %d = %+v", i, c)
		}
	}
	if chunks[1].Min[0].Value != int64(-4611686018427387902) || chunks[2].Min[0].Value != int64(0) {
		t.Errorf("bounds: %v %v", chunks[1].Min, chunks[2].Min)
	}
	table, err := NewRoutingTable(coll, chunks)
	if err != nil {
		t.Fatal(err)
	}
	if v := table.CollectionVersion(); v.Major != 1 || v.Minor != 3 || !v.SameCollection(ChunkVersion{Epoch: coll.Epoch, Timestamp: coll.Timestamp}) {
		t.Errorf("collection version %v", v)
	}
	if v := table.ShardVersion("a"); v.Major != 1 || v.Minor != 1 {
		t.Errorf("shard a version %v", v)
	}
	if v := table.ShardVersion("none"); v.Major != 0 || v.Minor != 0 || v.Epoch != coll.Epoch {
		t.Errorf("version of a shard without chunks %v", v)
	}
	if got := table.AllShards(); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("AllShards = %v", got)
	}
	ranged, _ := shardkey.Parse(bson.D{{Key: "a", Value: int32(1)}})
	if _, err := HashedInitialChunks(InitialLayout{Pattern: ranged, Shards: shards}); !errors.Is(err, ErrNotHashedPrefix) {
		t.Errorf("ranged key: %v", err)
	}
}

// randomChunks splits the hash space at up to 40 random points and hands
// the chunks to random shards.
func randomChunks(rng *rand.Rand, coll Collection, p *shardkey.Pattern) []Chunk {
	pts := make([]int64, rng.IntN(40))
	for i := range pts {
		pts[i] = int64(rng.Uint64())
	}
	if rng.IntN(4) == 0 && len(pts) > 0 {
		pts[0] = math.MinInt64 // a chunk holding no hash at all: [MinKey, MinInt64)
	}
	slices.Sort(pts)
	pts = slices.Compact(pts)
	bounds := splitBounds(p, pts)
	chunks := make([]Chunk, len(bounds)-1)
	for i := range chunks {
		chunks[i] = Chunk{ID: bson.NewObjectID(), UUID: coll.UUID, Min: bounds[i], Max: bounds[i+1],
			Shard: fmt.Sprintf("s%d", rng.IntN(5)), Lastmod: ts(uint32(1+rng.IntN(3)), uint32(rng.IntN(9)))}
	}
	rng.Shuffle(len(chunks), func(i, j int) { chunks[i], chunks[j] = chunks[j], chunks[i] })
	return chunks
}

// linearChunk is the reference lookup: the one chunk with Min <= key < Max.
func linearChunk(t *testing.T, chunks []Chunk, key bson.D) Chunk {
	var found []Chunk
	for _, c := range chunks {
		if compareKeys(c.Min, key) <= 0 && compareKeys(key, c.Max) < 0 {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d chunks own %v", len(found), key)
	}
	return found[0]
}

// TestRoutingTableProperties: for random layouts (8.0's initial one and
// random splits), the chunks tile MinKey..MaxKey with no gap or overlap,
// and ChunkFor, ChunkForHash and ShardsForRange agree with a linear scan
// for random keys and ranges.
func TestRoutingTableProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 2026))
	coll, p := hashedColl(t)
	for round := range 200 {
		var chunks []Chunk
		if round%4 == 0 {
			chunks = initial(t, coll, p, shardNames(1+rng.IntN(12)))
		} else {
			chunks = randomChunks(rng, coll, p)
		}
		table, err := NewRoutingTable(coll, chunks)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		sorted := table.Chunks()
		if compareKeys(sorted[0].Min, GlobalMin(p)) != 0 || compareKeys(sorted[len(sorted)-1].Max, GlobalMax(p)) != 0 {
			t.Fatalf("round %d: chunks do not span MinKey..MaxKey", round)
		}
		for i := 1; i < len(sorted); i++ {
			if compareKeys(sorted[i-1].Max, sorted[i].Min) != 0 {
				t.Fatalf("round %d: gap or overlap at chunk %d", round, i)
			}
		}
		checkLookups(t, rng, table, sorted)
	}
}

func checkLookups(t *testing.T, rng *rand.Rand, table *RoutingTable, chunks []Chunk) {
	for range 50 {
		h := int64(rng.Uint64())
		if rng.IntN(8) == 0 { // bounds themselves and the ends of the space
			h = []int64{math.MinInt64, math.MaxInt64, 0, -1}[rng.IntN(4)]
			if c := chunks[rng.IntN(len(chunks))]; c.Min[0].Value != (bson.MinKey{}) {
				h = c.Min[0].Value.(int64)
			}
		}
		key := bson.D{{Key: "k", Value: h}}
		want := linearChunk(t, chunks, key)
		if got := table.ChunkFor(key); got.ID != want.ID {
			t.Fatalf("ChunkFor(%d) = %v, want %v", h, got.Min, want.Min)
		}
		if got, ok := table.ChunkForHash(h); !ok || got.ID != want.ID {
			t.Fatalf("ChunkForHash(%d) = %v, want %v", h, got.Min, want.Min)
		}
		lo, hi := int64(rng.Uint64()), int64(rng.Uint64())
		checkRange(t, table, chunks, bson.D{{Key: "k", Value: lo}}, bson.D{{Key: "k", Value: hi}})
	}
	checkRange(t, table, chunks, GlobalMin(table.Pattern()), GlobalMax(table.Pattern()))
}

func checkRange(t *testing.T, table *RoutingTable, chunks []Chunk, lo, hi bson.D) {
	var want []string
	for _, c := range chunks {
		if compareKeys(lo, hi) < 0 && compareKeys(c.Min, hi) < 0 && compareKeys(lo, c.Max) < 0 {
			want = append(want, c.Shard)
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	if got := table.ShardsForRange(lo, hi); !slices.Equal(got, want) {
		t.Fatalf("ShardsForRange(%v, %v) = %v, want %v", lo, hi, got, want)
	}
}

// TestRoutingTableRefusesBadTilings: each way chunks can fail to tile the
// key space is refused.
func TestRoutingTableRefusesBadTilings(t *testing.T) {
	coll, p := hashedColl(t)
	other, _ := NewUUID()
	for _, tc := range []struct {
		name   string
		mutate func([]Chunk) []Chunk
	}{
		{"none", func([]Chunk) []Chunk { return nil }},
		{"gap", func(c []Chunk) []Chunk { return append(c[:1], c[2:]...) }},
		{"overlap", func(c []Chunk) []Chunk { c[1].Min = bson.D{{Key: "k", Value: int64(-5e18)}}; return c }},
		{"no MinKey start", func(c []Chunk) []Chunk { return c[1:] }},
		{"no MaxKey end", func(c []Chunk) []Chunk { return c[:len(c)-1] }},
		{"other collection", func(c []Chunk) []Chunk { c[2].UUID = other; return c }},
		{"empty chunk", func(c []Chunk) []Chunk {
			c[1].Max = c[1].Min
			c[2].Min = c[1].Min
			return c
		}},
		{"longer key", func(c []Chunk) []Chunk {
			c[0].Max = append(c[0].Max, bson.E{Key: "x", Value: int32(1)})
			return c
		}},
		{"other field", func(c []Chunk) []Chunk {
			c[3].Min = bson.D{{Key: "j", Value: c[3].Min[0].Value}}
			return c
		}},
	} {
		chunks := tc.mutate(initial(t, coll, p, shardNames(4)))
		if _, err := NewRoutingTable(coll, chunks); !errors.Is(err, ErrBadRoutingTable) {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}

// TestRoutingTableRangedKey: a compound ranged key routes by BSON order
// of its fields; ChunkForHash declines it.
func TestRoutingTableRangedKey(t *testing.T) {
	key := bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: int32(1)}}
	coll, _ := hashedColl(t)
	coll.Key = key
	p, _ := shardkey.Parse(key)
	mid := bson.D{{Key: "a", Value: "m"}, {Key: "b", Value: bson.MinKey{}}}
	chunks := []Chunk{
		{ID: bson.NewObjectID(), UUID: coll.UUID, Min: GlobalMin(p), Max: mid, Shard: "x", Lastmod: ts(1, 0)},
		{ID: bson.NewObjectID(), UUID: coll.UUID, Min: mid, Max: GlobalMax(p), Shard: "y", Lastmod: ts(1, 1)},
	}
	table, err := NewRoutingTable(coll, chunks)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a     any
		shard string
	}{{int32(5), "x"}, {"a", "x"}, {"m", "y"}, {"z", "y"}, {bson.D{}, "y"}, {nil, "x"}} {
		if got := table.ChunkFor(bson.D{{Key: "a", Value: tc.a}, {Key: "b", Value: int32(0)}}); got.Shard != tc.shard {
			t.Errorf("a=%v: shard %s, want %s", tc.a, got.Shard, tc.shard)
		}
	}
	if _, ok := table.ChunkForHash(0); ok {
		t.Error("ChunkForHash on a ranged key")
	}
}

func BenchmarkRoutingLookup(b *testing.B) {
	coll, p := hashedColl(b)
	chunks := initial(b, coll, p, shardNames(1024))
	table, err := NewRoutingTable(coll, chunks)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	hashes := make([]int64, 4096)
	for i := range hashes {
		hashes[i] = int64(rng.Uint64())
	}
	b.Run("ChunkForHash", func(b *testing.B) {
		i := 0
		for b.Loop() {
			table.ChunkForHash(hashes[i&4095])
			i++
		}
	})
	b.Run("ChunkFor", func(b *testing.B) {
		keys := make([]bson.D, len(hashes))
		for i, h := range hashes {
			keys[i] = bson.D{{Key: "k", Value: h}}
		}
		i := 0
		for b.Loop() {
			table.ChunkFor(keys[i&4095])
			i++
		}
	})
}
