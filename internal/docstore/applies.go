package docstore

import (
	"context"
	"time"

	"github.com/mayflydb/mayfly/internal/storage"
)

// A replica set member applies the log beneath the store: its batches
// reach storage first, and the collections' counts they change are
// published after, without the collections' schema locks (a catalog
// change holds one while it waits for its own entry to apply). A reader
// that pairs the counts with what storage holds (validate) must not see
// one without the other, so the member brackets each apply, from before
// its commit to its last count, between BeginApply and EndApply, and
// the reader pins counts and a snapshot only outside such a span: a
// sequence count, odd while an apply is under way.

// BeginApply marks the start of an apply whose counts are published
// after its storage commit. Every BeginApply is followed by EndApply.
func (s *Store) BeginApply() { s.applies.Add(1) }

// EndApply marks the end of the apply BeginApply started.
func (s *Store) EndApply() { s.applies.Add(1) }

// pinnedView is a collection's state, counts and a storage snapshot
// taken together: the counts are those of what the snapshot holds.
type pinnedView struct {
	st                  *collState
	keptCount, keptSize int64
	snap                storage.Snapshot
}

// pinAttemptWait is the first wait before pinning again after an apply
// overlapped an attempt; each wait doubles, up to pinMaxWait. The waits
// are real time, not the server's clock: they wait for an apply to end,
// not for a date.
const (
	pinAttemptWait = 50 * time.Microsecond
	pinMaxWait     = 5 * time.Millisecond
)

// pin takes c's state, counts and a snapshot that agree. The schema
// lock keeps out the writes that publish their counts under it (every
// write through the store), and only for the moment the snapshot takes;
// an attempt an apply overlapped is taken again.
func (c *Collection) pin(ctx context.Context) (pinnedView, error) {
	wait := pinAttemptWait
	for {
		if v, ok := c.tryPin(); ok {
			return v, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return pinnedView{}, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, pinMaxWait)
	}
}

func (c *Collection) tryPin() (pinnedView, bool) {
	seq := c.store.applies.Load()
	if seq%2 == 1 {
		return pinnedView{}, false
	}
	c.schemaMu.Lock()
	v := pinnedView{st: c.state.Load(), keptCount: c.count.Load(), keptSize: c.dataSize.Load(), snap: c.store.eng.NewSnapshot()}
	c.schemaMu.Unlock()
	if c.store.applies.Load() != seq {
		_ = v.snap.Close()
		return pinnedView{}, false
	}
	return v, true
}
