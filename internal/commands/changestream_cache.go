package commands

import (
	"sync"

	"github.com/mayflydb/mayfly/internal/changestream"
)

// eventCacheSlots is the number of recently encoded events kept: enough
// for every stream tailing the log to find the events of the last few
// batches, small enough to stay in cache.
const eventCacheSlots = 4096

// eventCache holds change events already encoded, so that streams
// reading the same log position with the same options share one
// encoding instead of each decoding the change and encoding its event.
// A slot is keyed by position and options; a newer event in the same
// slot replaces an older one. The bytes are never written after they
// are stored, so readers share them without copying.
type eventCache struct {
	mu    sync.Mutex
	slots [eventCacheSlots]cachedEvent
}

type cachedEvent struct {
	pos  changestream.Position
	opts string
	raw  []byte
}

func newEventCache() *eventCache { return &eventCache{} }

func slotOf(pos changestream.Position) int {
	h := uint64(pos.TS.T)*0x9e3779b97f4a7c15 ^ uint64(pos.TS.I)*0xff51afd7ed558ccd ^ uint64(pos.Index)
	return int(h % eventCacheSlots)
}

func (c *eventCache) get(pos changestream.Position, opts string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := &c.slots[slotOf(pos)]; e.pos == pos && e.opts == opts {
		return e.raw
	}
	return nil
}

func (c *eventCache) put(pos changestream.Position, opts string, raw []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slots[slotOf(pos)] = cachedEvent{pos: pos, opts: opts, raw: raw}
}

// cacheKey is what an event's encoding depends on beyond its position,
// or "" when it depends on more: stages after $changeStream other than a
// pushed-down $match, an updateLookup (the document as it is when read),
// or a change that ends the stream (an invalidate event follows it).
func (c *streamCursor) cacheKey(ev *changestream.Event) string {
	if c.spec.pipeline != nil || c.spec.fullDocument == "updateLookup" || c.spec.scope.invalidatedBy(ev) {
		return ""
	}
	m := c.spec.match
	if m != nil && m.key == "" {
		return ""
	}
	if c.optsKey == "" { // made once: a storm asks it for every event
		c.optsKey = c.spec.fullDocument + "/" + c.spec.before
		if c.spec.expanded {
			c.optsKey += "/x"
		}
		if m != nil {
			c.optsKey += m.key
		}
	}
	return c.optsKey
}

// encodedEvents is the encoded events of one change for the stream,
// from the cache when another stream with the same options encoded it.
// A pushed-down $match is tested first, on the change itself.
func (c *streamCursor) encodedEvents(r *request, rec changestream.Record) ([][]byte, error) {
	ev := rec.Event
	if !c.spec.covers(ev) {
		return nil, nil
	}
	key := ""
	if !c.spec.scope.invalidatedBy(ev) {
		if keep, err := c.keeps(ev); err != nil || !keep {
			return nil, err
		}
		key = c.cacheKey(ev)
	}
	cache := c.h.events
	if key != "" {
		if raw := cache.get(rec.Pos, key); raw != nil {
			return c.single(raw), nil
		}
	}
	if encode := c.plainEncoder(ev); key != "" && encode != nil {
		raw, err := encode(rec)
		if err != nil {
			return nil, err
		}
		if len(raw) <= maxResultBytes {
			cache.put(rec.Pos, key, raw)
			return c.single(raw), nil
		}
	}
	docs, err := c.events(r, rec)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(docs))
	for i, d := range docs {
		if out[i], err = encodeResult(d); err != nil {
			return nil, err
		}
	}
	if key != "" && len(out) == 1 {
		cache.put(rec.Pos, key, out[0])
	}
	return out, nil
}

// single is the one event of a change, in the cursor's own slice: the
// caller reads it before asking for the next change.
func (c *streamCursor) single(raw []byte) [][]byte {
	c.one[0] = raw
	return c.one[:]
}
