package changestream

import (
	"sync"
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
	pos  Position
	opts string
	raw  []byte
}

func newEventCache() *eventCache { return &eventCache{} }

func slotOf(pos Position) int {
	h := uint64(pos.TS.T)*0x9e3779b97f4a7c15 ^ uint64(pos.TS.I)*0xff51afd7ed558ccd ^ uint64(pos.Index)
	return int(h % eventCacheSlots)
}

func (c *eventCache) get(pos Position, opts string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := &c.slots[slotOf(pos)]; e.pos == pos && e.opts == opts {
		return e.raw
	}
	return nil
}

func (c *eventCache) put(pos Position, opts string, raw []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slots[slotOf(pos)] = cachedEvent{pos: pos, opts: opts, raw: raw}
}

// cacheKey is what an event's encoding depends on beyond its position,
// or "" when it depends on more: stages after $changeStream other than a
// pushed-down $match, an updateLookup (the document as it is when read),
// or a change that ends the stream (an invalidate event follows it).
func (c *Stream) cacheKey(ev *Event) string {
	if c.spec.Pipeline != nil || c.spec.FullDocument == "updateLookup" || c.spec.Scope.invalidatedBy(ev) {
		return ""
	}
	m := c.spec.Match
	if m != nil && m.key == "" {
		return ""
	}
	if c.optsKey == "" { // made once: a storm asks it for every event
		c.optsKey = c.spec.FullDocument + "/" + c.spec.Before
		if c.spec.Expanded {
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
func (c *Stream) encodedEvents(call *Call, rec Record) ([][]byte, error) {
	ev := rec.Event
	if !c.spec.covers(ev) {
		return nil, nil
	}
	key := ""
	if !c.spec.Scope.invalidatedBy(ev) {
		if keep, err := c.keeps(ev); err != nil || !keep {
			return nil, err
		}
		key = c.cacheKey(ev)
	}
	cache := c.streams.events
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
		if len(raw) <= c.streams.host.MaxEventBytes() {
			cache.put(rec.Pos, key, raw)
			return c.single(raw), nil
		}
	}
	docs, err := c.events(call, rec)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(docs))
	for i, d := range docs {
		if out[i], err = c.streams.host.EncodeEvent(d); err != nil {
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
func (c *Stream) single(raw []byte) [][]byte {
	c.one[0] = raw
	return c.one[:]
}
