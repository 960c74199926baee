package repl

import (
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// entryCache keeps the newest log entries in memory, as appended: raft
// reads every entry back soon after writing it (to apply it once it is
// committed, and to send it to a member that fell a little behind), and
// reading it from the engine then costs sstable block reads once the
// memtable has flushed. It holds at most maxBytes of entries, contiguous
// by index. Its owner (logStore) holds the lock.
type entryCache struct {
	first    uint64 // index of ents[0]
	ents     []*pb.Entry
	bytes    int
	maxBytes int
}

// entryCacheBytes bounds the cache: a few seconds of writes at the rates
// a member sustains, and a whole 16,000-document expiry batch many times.
const entryCacheBytes = 64 << 20

// add records appended entries; a conflicting tail (raft replacing
// entries from ents[0]'s index on) is dropped first.
func (c *entryCache) add(ents []*pb.Entry) {
	if len(ents) == 0 {
		return
	}
	at := ents[0].GetIndex()
	switch {
	case len(c.ents) == 0 || at < c.first || at > c.first+uint64(len(c.ents)):
		c.reset()
		c.first = at
	case at < c.first+uint64(len(c.ents)):
		for _, e := range c.ents[at-c.first:] {
			c.bytes -= proto.Size(e)
		}
		clear(c.ents[at-c.first:])
		c.ents = c.ents[:at-c.first]
	}
	for _, e := range ents {
		c.ents = append(c.ents, e)
		c.bytes += proto.Size(e)
	}
	c.trim()
}

// trim drops the oldest entries while the cache is over its bound.
func (c *entryCache) trim() {
	n := 0
	for n < len(c.ents)-1 && c.bytes > c.maxBytes {
		c.bytes -= proto.Size(c.ents[n])
		c.ents[n] = nil
		n++
	}
	if n > 0 {
		c.ents = c.ents[n:]
		c.first += uint64(n)
	}
}

func (c *entryCache) reset() {
	c.ents, c.bytes = nil, 0
}

// get returns entries [lo, hi) limited to maxSize bytes (at least one), or
// false when the cache does not hold all of them.
func (c *entryCache) get(lo, hi, maxSize uint64) ([]*pb.Entry, bool) {
	if len(c.ents) == 0 || lo < c.first || hi > c.first+uint64(len(c.ents)) || lo >= hi {
		return nil, false
	}
	src := c.ents[lo-c.first : hi-c.first]
	var size uint64
	n := 0
	for n < len(src) {
		size += uint64(proto.Size(src[n]))
		if n > 0 && size > maxSize {
			break
		}
		n++
	}
	return append([]*pb.Entry(nil), src[:n]...), true
}
