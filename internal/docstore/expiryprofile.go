package docstore

import (
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// ExpiryProfile is what a TTL index holds around now: the documents past
// their expiry that are still stored, and those due within a horizon.
// Entries are counted: a document whose TTL field is an array of dates
// counts once per date.
type ExpiryProfile struct {
	// Overdue counts the entries whose expiry has passed.
	Overdue int64
	// OldestOverdue is the expiry of the earliest of them (zero: none).
	OldestOverdue time.Time
	// Next is the earliest expiry after now (zero: none).
	Next time.Time
	// Upcoming[i] counts the documents expiring in (now+i·step,
	// now+(i+1)·step], each at its current date: a touched document's
	// stale entries are not counted.
	Upcoming []int64
}

// ExpiryProfile reads the named TTL index's date entries from the earliest
// up to now+steps·step, and one more for Next. It reads only the overdue
// entries and those in the horizon, never the whole index: with steps 0,
// only the overdue ones.
//
// A touched document's stale entries (0003, "Touches") are not counted
// ahead, without reading it: each one not yet due is the newest date
// exactly one later entry of its document lists. Overdue entries are
// counted as they are: the monitor's next pass removes the stale ones.
func (c *Collection) ExpiryProfile(index string, now time.Time, step time.Duration, steps int) (ExpiryProfile, error) {
	p := ExpiryProfile{Upcoming: make([]int64, steps)}
	ix := c.state.Load().ttlIndex(index)
	if ix == nil {
		return p, nil
	}
	horizon := now.Add(time.Duration(steps) * step)
	tc, err := c.openTTLCursor(ix, nil)
	if err != nil {
		return p, fmt.Errorf("docstore: expiry profile of %s: %w", c.Namespace(), err)
	}
	defer tc.it.Close()
	stepOf := func(at time.Time) int { return min(int((at.Sub(now)-1)/step), steps-1) }
	for ; tc.ok; tc.advance() {
		d, ok := ix.entryDate(tc.it.Key())
		if !ok {
			break
		}
		at := ix.expiry(d)
		if at.After(horizon) {
			if p.Next.IsZero() {
				p.Next = at
			}
			break
		}
		if !at.After(now) {
			if p.Overdue == 0 {
				p.OldestOverdue = at
			}
			p.Overdue++
			continue
		}
		if p.Next.IsZero() {
			p.Next = at
		}
		p.Upcoming[stepOf(at)]++
		if d, ok := ttlentry.NewestStale(tc.it.Key(), tc.it.Value()); ok && ix.expiry(bson.DateTime(d)).After(now) {
			p.Upcoming[stepOf(ix.expiry(bson.DateTime(d)))]--
		}
	}
	return p, tc.it.Error()
}
