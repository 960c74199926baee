package bench

import (
	"sort"
	"time"
)

// schedule is when each storm document expires. Document i stores the
// date at(i) = anchor + i·window/n (whole milliseconds, as BSON dates
// are), and its TTL index adds after, so it expires at at(i) + after.
// The expiries are in document order, which is also the TTL index's order
// and so the order in which the server deletes them.
type schedule struct {
	anchor time.Time // whole milliseconds, no monotonic reading
	n      int
	window time.Duration
	after  time.Duration // the TTL index's expireAfterSeconds
	// shuffled gives documents _ids in no relation to their expiry order,
	// as sessions with ObjectIds touched at random have; otherwise
	// document i's _id is i.
	shuffled bool
}

// id is document i's _id: a bijection, so never a collision.
func (s schedule) id(i int) int64 {
	if s.shuffled {
		return int64(mix64(uint64(i)) >> 1)
	}
	return int64(i)
}

func newSchedule(n int, window time.Duration) schedule {
	return schedule{anchor: time.Now().Truncate(time.Millisecond), n: n, window: window}
}

func (s schedule) at(i int) time.Time {
	off := time.Duration(int64(i) * int64(s.window) / int64(max(s.n, 1)))
	return s.anchor.Add(off.Truncate(time.Millisecond))
}

func (s schedule) expiry(i int) time.Time { return s.at(i).Add(s.after) }

// expiredBy is the number of documents whose expiry is at or before t.
func (s schedule) expiredBy(t time.Time) int {
	return sort.Search(s.n, func(i int) bool { return s.expiry(i).After(t) })
}

// startAtOrAfter sets after to the smallest whole number of seconds that
// puts the first expiry at or after t, and returns that first expiry.
func (s *schedule) startAtOrAfter(t time.Time) time.Time {
	d := t.Sub(s.anchor)
	s.after = d.Truncate(time.Second)
	if s.after < d {
		s.after += time.Second
	}
	return s.expiry(0)
}
