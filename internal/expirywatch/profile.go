package expirywatch

import (
	"time"

	"github.com/mayflydb/mayfly/internal/docstore"
)

// nextReads bounds the documents a profile reads to tell the next expiry
// from a touched document's stale entries before it: past it, Next is
// the entry where it stopped, a lower bound.
const nextReads = 64

// profile is what a TTL index holds around now: the entries past their
// expiry still stored, the next document's expiry, and the documents due
// within a horizon.
type profile struct {
	// Overdue counts the entries whose expiry has passed; OldestOverdue
	// is the earliest of those expiries (zero: none). A touched
	// document's stale entries among them last until the monitor's next
	// pass removes them.
	Overdue       int64
	OldestOverdue time.Time
	// Next is the earliest expiry after now of a document's own entry
	// (zero: none).
	Next time.Time
	// Upcoming[i] counts the documents expiring in (now+i·step,
	// now+(i+1)·step], each once, at its current date.
	Upcoming []int64
}

// readProfile reads the named TTL index's entries from the earliest up to
// now+steps·step (with steps 0, only the overdue ones), and, when next is
// set, beyond while it looks for Next: never the whole index. It counts documents without
// reading them: a touched document's stale entry not yet due is taken
// back where the later entry that lists it last is met. A document whose
// TTL field is an array of dates counts once per date.
func readProfile(c *docstore.Collection, index string, now time.Time, step time.Duration, steps int, next bool) (profile, error) {
	p := profile{Upcoming: make([]int64, steps)}
	e, err := c.TTLEntries(index)
	if err != nil || e == nil {
		return p, err
	}
	horizon := now.Add(time.Duration(steps) * step)
	stepOf := func(at time.Time) int { return min(int((at.Sub(now)-1)/step), steps-1) }
	looking, reads := next, 0 // for Next, and the documents read for it
	for e.Next() {
		at, ok := e.Expiry()
		if !ok {
			break
		}
		if !at.After(now) {
			if p.Overdue == 0 {
				p.OldestOverdue = at
			}
			p.Overdue++
			continue
		}
		if looking {
			stale, err := e.Stale()
			if err != nil {
				_ = e.Close()
				return p, err
			}
			if reads++; !stale || reads == nextReads {
				p.Next, looking = at, false
			}
		}
		if at.After(horizon) {
			if looking {
				continue
			}
			break
		}
		p.Upcoming[stepOf(at)]++
		if was, ok := e.ListedExpiry(); ok && was.After(now) {
			p.Upcoming[stepOf(was)]--
		}
	}
	return p, e.Close()
}
