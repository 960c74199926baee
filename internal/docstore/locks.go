package docstore

import (
	"errors"
	"hash/maphash"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Locking. A write to one document holds, in this order:
//
//  1. the collection's schemaMu shared (index and catalog changes take it
//     exclusively, so a write always sees one index set);
//  2. the stripe of its _id: writes to different documents run in
//     parallel, writes to one document in turn;
//  3. uniqueMu, only when it adds entries to a unique secondary index or
//     writes a capped collection: two writers cannot both claim one key,
//     and capped eviction sees one insertion order.
//
// A write that must also remove another document (an expired holder of its
// unique key, a capped victim, a TTL batch) only try-locks that document's
// stripe; when it is busy the write starts over (errRetry) or, for TTL,
// leaves the document to the next batch. Nothing ever waits for a stripe
// while holding another, so there is no lock-order cycle.

// lockStripes is the number of per-document lock stripes per collection.
const lockStripes = 64

// errRetry asks the caller to release every lock and run the write again.
var errRetry = errors.New("docstore: lock busy, retry")

// A write that must retry yields at first (the holder is usually running
// and about to release), then sleeps, backing off, since the holder may
// be a thread the kernel has paused on a busy machine: a thousand yields
// pass in under a millisecond, and a write that gave up after them
// answered WriteConflict under CPU load. mongod retries a write conflict
// outside a transaction without end; a write here gives up only after
// retryBudget of sleeping, which a holder never takes unless stuck. The
// sleeps are real time, not the server's clock: they wait for a thread,
// not for a date.
const (
	retrySpins     = 100
	retryFirstWait = 20 * time.Microsecond
	retryMaxWait   = 2 * time.Millisecond
	retryBudget    = 10 * time.Second
)

func (c *Collection) stripeOf(idEnc []byte) int {
	return int(maphash.Bytes(c.seed, idEnc) % lockStripes)
}

// lockSet is the locks one write holds.
type lockSet struct {
	c       *Collection
	stripes [lockStripes]bool
	unique  bool
}

func (l *lockSet) lockStripe(i int) {
	if !l.stripes[i] {
		l.c.stripes[i].Lock()
		l.stripes[i] = true
	}
}

// tryStripe locks stripe i unless another writer holds it.
func (l *lockSet) tryStripe(i int) bool {
	if l.stripes[i] {
		return true
	}
	if !l.c.stripes[i].TryLock() {
		return false
	}
	l.stripes[i] = true
	return true
}

// tryAllStripes locks every stripe no other writer holds.
func (l *lockSet) tryAllStripes() {
	for i := range l.stripes {
		l.tryStripe(i)
	}
}

// lockAllStripes locks every stripe, in order, waiting for each.
func (l *lockSet) lockAllStripes() {
	for i := range l.stripes {
		l.lockStripe(i)
	}
}

// lockForPass takes the stripes of a background pass (expiry, warnings):
// those no writer holds, which the pass leaves for its next round. While
// an index build runs it waits for every stripe instead: each batch of
// the build holds them all, and a pass that only tried them would find
// them held round after round.
func (l *lockSet) lockForPass() {
	if l.c.builds.running() {
		l.lockAllStripes()
		return
	}
	l.tryAllStripes()
}

func (l *lockSet) lockUnique() {
	if !l.unique {
		l.c.uniqueMu.Lock()
		l.unique = true
	}
}

func (l *lockSet) release() {
	if l.unique {
		l.c.uniqueMu.Unlock()
		l.unique = false
	}
	for i, held := range l.stripes {
		if held {
			l.c.stripes[i].Unlock()
			l.stripes[i] = false
		}
	}
}

// withDocLock runs fn holding the schema lock shared and the stripe of
// idEnc, retrying while fn reports errRetry.
func (c *Collection) withDocLock(idEnc []byte, fn func(l *lockSet) error) error {
	return c.withDocLockIn(new(lockSet), idEnc, fn)
}

// withDocLockIn is withDocLock with the caller's lockSet, which each
// attempt resets and releases: nothing keeps it past fn.
func (c *Collection) withDocLockIn(l *lockSet, idEnc []byte, fn func(l *lockSet) error) error {
	return retrying(func() error { return c.lockedOnce(l, idEnc, fn) },
		"write conflict: another write holds a document this write must change")
}

// retrying runs once again, its locks released in between, while it asks
// for a retry (WriteConflict once retryBudget is slept) or for a wait on
// an expiry batch in flight.
func retrying(once func() error, conflict string) error {
	return retryingWithin(once, conflict, retryBudget)
}

func retryingWithin(once func() error, conflict string, budget time.Duration) error {
	var slept time.Duration
	wait := retryFirstWait
	for attempt := 0; ; attempt++ {
		err := once()
		if err == nil {
			// Most writes succeed at once: return before errors.As, whose
			// target would otherwise escape to the heap on every write.
			return nil
		}
		var inFlight errInFlight
		switch {
		case errors.As(err, &inFlight):
			_ = inFlight.batch.Wait() // failed or not, the write reads again
		case !errors.Is(err, errRetry):
			return err
		case attempt < retrySpins:
			runtime.Gosched()
		case slept >= budget:
			return mongoerr.New(mongoerr.WriteConflict, conflict)
		default:
			// Jitter keeps two writers that each hold what the other
			// tries from backing off in step.
			d := wait/2 + rand.N(wait/2+1)
			time.Sleep(d)
			slept += d
			wait = min(2*wait, retryMaxWait)
		}
	}
}

func (c *Collection) lockedOnce(l *lockSet, idEnc []byte, fn func(l *lockSet) error) error {
	c.schemaMu.RLock()
	defer c.schemaMu.RUnlock()
	*l = lockSet{c: c}
	defer l.release()
	l.lockStripe(c.stripeOf(idEnc))
	return fn(l)
}
