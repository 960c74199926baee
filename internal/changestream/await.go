package changestream

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
)

// Await reads a batch; an empty one waits for the next commit, up to the
// getMore's maxTimeMS (1 s by default), and reads again, and a short one
// behind a steady flow may gather more (gather). The wait is one
// timer, never a deadline on the clock: the clock may be set back (the
// test clock, or the system's) and would stretch the wait by as much.
func (c *Stream) Await(call *Call, n int64) ([]bson.Raw, error) {
	t := c.streams.clock.NewTimer(call.Wait)
	defer t.Stop()
	steady := c.lastBatch > 0 // the stream's last batch had events
	for {
		changed := c.streams.feed.Signal.Wait() // before the read: no commit slips between
		docs, err := c.Read(call, n)
		if err != nil || c.ended {
			return docs, err
		}
		if len(docs) > 0 {
			if steady && worthGathering(docs, n) {
				return c.gather(call, n, docs, t)
			}
			return docs, nil
		}
		if timedOut := c.waitChange(call, changed, t); timedOut {
			return c.Read(call, n)
		}
		if call.Ctx.Err() != nil {
			return docs, nil
		}
	}
}

// worthGathering reports whether a batch of a stream behind a steady flow
// is short enough to wait on: at least GatherFrom events and fewer than
// GatherFull, under the getMore's batchSize n and under GatherBytes. A
// trickle, or a stream catching up on a backlog, is answered at once.
func worthGathering(docs []bson.Raw, n int64) bool {
	short := len(docs) >= GatherFrom && len(docs) < GatherFull && (n <= 0 || int64(len(docs)) < n)
	return short && rawBytes(docs) < GatherBytes
}

// gather lets a stream that is behind a steady flow of changes (its last
// batch had events too) take them in fewer, bigger batches: it waits
// GatherWait, never past the getMore's own wait, and reads on. Each
// getMore costs the server and the consumer a round trip whatever it
// carries; ten streams on a busy server made one every 50 changes, and
// three times fewer once gathered.
func (c *Stream) gather(call *Call, n int64, docs []bson.Raw, wait clock.Timer) ([]bson.Raw, error) {
	if !c.pause(call, wait) {
		return docs, nil
	}
	rest := n
	if n > 0 {
		rest = n - int64(len(docs))
	}
	more, err := c.Read(call, rest)
	if err != nil {
		return nil, err
	}
	c.lastBatch = len(docs) + len(more)
	return append(docs, more...), nil
}

// pause waits GatherWait, as a waiting operation; it reports false when
// the request ended first.
func (c *Stream) pause(call *Call, wait clock.Timer) bool {
	defer call.Waiting()()
	t := c.streams.clock.NewTimer(GatherWait)
	defer t.Stop()
	select {
	case <-t.C():
	case <-wait.C():
	case <-call.Ctx.Done():
		return false
	}
	return true
}

// rawBytes is the size of a batch's events.
func rawBytes(docs []bson.Raw) int {
	n := 0
	for _, d := range docs {
		n += len(d)
	}
	return n
}

// The bounds of gather: a batch of at least GatherFrom events and under
// GatherFull, from a stream whose last batch had events, waits GatherWait
// for more. Under a busy server's flow (10,000 changes a second) that
// triples a batch and adds a few milliseconds to an event's delivery. A
// batch of GatherBytes or more is sent as it is: what the second read
// adds (up to streamBatchBytes) must leave the reply under 16 MiB.
const (
	GatherFrom  = 16
	GatherFull  = 128
	GatherWait  = 8 * time.Millisecond
	GatherBytes = 1 << 20
)

// waitChange waits, as a waiting operation, for the next commit, the
// request's end or the timer; it reports whether the timer fired first.
func (c *Stream) waitChange(call *Call, changed <-chan struct{}, t clock.Timer) (timedOut bool) {
	defer call.Waiting()()
	select {
	case <-changed:
	case <-call.Ctx.Done():
	case <-t.C():
		return true
	}
	return false
}
