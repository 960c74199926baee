package docstore

import (
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// EmptyTimestamps hands out the timestamps MongoDB writes in place of a
// top-level Timestamp(0, 0) on insert: the current second, with an
// increment that makes each one unique within that second. Its zero
// value is ready to use.
type EmptyTimestamps struct {
	mu   sync.Mutex
	last bson.Timestamp
}

func (c *EmptyTimestamps) next(now time.Time) bson.Timestamp {
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

// Fill replaces doc's top-level Timestamp(0, 0) values (not _id) with
// the time now, as mongod does on insert unless bypassEmptyTsReplacement
// is set. The document is copied only when it has one.
func (c *EmptyTimestamps) Fill(doc bson.D, now time.Time) bson.D {
	var out bson.D
	for i, e := range doc {
		if ts, ok := e.Value.(bson.Timestamp); !ok || ts != (bson.Timestamp{}) || e.Key == "_id" {
			continue
		}
		if out == nil {
			out = append(bson.D(nil), doc...)
		}
		out[i].Value = c.next(now)
	}
	if out == nil {
		return doc
	}
	return out
}
