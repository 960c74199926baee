package repl

import (
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func cacheEntries(term uint64, from, to uint64) []*pb.Entry {
	var out []*pb.Entry
	for i := from; i <= to; i++ {
		out = append(out, &pb.Entry{Index: proto.Uint64(i), Term: proto.Uint64(term), Data: make([]byte, 100)})
	}
	return out
}

func cachedIndexes(t *testing.T, c *entryCache, lo, hi, maxSize uint64) []uint64 {
	t.Helper()
	ents, ok := c.get(lo, hi, maxSize)
	if !ok {
		return nil
	}
	var out []uint64
	for _, e := range ents {
		out = append(out, e.GetIndex())
	}
	return out
}

// The cache serves what was appended last, replaces a conflicting tail as
// raft does, stays under its bound, and answers false for what it lacks.
func TestEntryCache(t *testing.T) {
	size := proto.Size(cacheEntries(1, 1, 1)[0])
	c := &entryCache{maxBytes: 5 * size}
	c.add(cacheEntries(1, 1, 4))
	if got := cachedIndexes(t, c, 2, 5, 1<<20); len(got) != 3 || got[0] != 2 || got[2] != 4 {
		t.Fatalf("get [2,5): %v", got)
	}
	if got := cachedIndexes(t, c, 1, 5, uint64(2*size)); len(got) != 2 {
		t.Fatalf("maxSize of two entries gave %v", got)
	}
	if got := cachedIndexes(t, c, 1, 5, 1); len(got) != 1 {
		t.Fatalf("a maxSize below one entry still gives one: %v", got)
	}
	c.add(cacheEntries(2, 3, 6)) // a new leader replaces 3 and 4
	ents, _ := c.get(3, 4, 1<<20)
	if ents[0].GetTerm() != 2 {
		t.Fatalf("entry 3 has term %d after the conflict, want 2", ents[0].GetTerm())
	}
	if c.first != 2 || len(c.ents) != 5 || c.bytes != 5*size {
		t.Fatalf("after trim: first %d, %d entries, %d bytes; want 2, 5, %d", c.first, len(c.ents), c.bytes, 5*size)
	}
	if _, ok := c.get(1, 3, 1<<20); ok {
		t.Fatal("entry 1 was trimmed, yet the cache answered")
	}
	if _, ok := c.get(6, 8, 1<<20); ok {
		t.Fatal("entry 7 was never appended, yet the cache answered")
	}
	c.add(cacheEntries(2, 10, 10)) // a gap: start again from 10
	if got := cachedIndexes(t, c, 10, 11, 1<<20); len(got) != 1 || c.first != 10 {
		t.Fatalf("after a gap: %v, first %d", got, c.first)
	}
}
