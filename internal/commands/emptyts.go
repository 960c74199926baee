package commands

import (
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// emptyTsClock hands out the timestamps MongoDB writes in place of a
// top-level Timestamp(0, 0) on insert: the current second, with an
// increment that makes each one unique within that second.
type emptyTsClock struct {
	mu   sync.Mutex
	last bson.Timestamp
}

func (c *emptyTsClock) next(now time.Time) bson.Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	secs := uint32(now.Unix())
	if secs > c.last.T {
		c.last = bson.Timestamp{T: secs, I: 1}
	} else {
		c.last.I++
	}
	return c.last
}

// fillEmptyTimestamps replaces top-level Timestamp(0, 0) values (not _id)
// with the time, as mongod does unless bypassEmptyTsReplacement is set.
// The document is copied only when it has one.
func (h *Handler) fillEmptyTimestamps(doc bson.D) bson.D {
	var out bson.D
	for i, e := range doc {
		if ts, ok := e.Value.(bson.Timestamp); !ok || ts != (bson.Timestamp{}) || e.Key == "_id" {
			continue
		}
		if out == nil {
			out = append(bson.D(nil), doc...)
		}
		out[i].Value = h.emptyTs.next(h.deps.Clock.Now())
	}
	if out == nil {
		return doc
	}
	return out
}
