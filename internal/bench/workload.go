package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// opKind is one of the session workload's operations.
type opKind int

const (
	opTouch opKind = iota
	opVerify
	opLogin
	opLogout
	numOps
)

func (k opKind) String() string {
	switch k {
	case opTouch:
		return "touch"
	case opVerify:
		return "verify"
	case opLogin:
		return "login"
	case opLogout:
		return "logout"
	}
	return fmt.Sprintf("op(%d)", int(k))
}

// pickOp maps a uniform number in [0, 100) to the mix: 70% touch, 20%
// verify, 5% login, 5% logout.
func pickOp(pct int) opKind {
	switch {
	case pct < 70:
		return opTouch
	case pct < 90:
		return opVerify
	case pct < 95:
		return opLogin
	}
	return opLogout
}

// mixSpec says which sessions exist and how workers share them.
type mixSpec struct {
	clients   int // number of workers
	preloaded int // sessions 0..preloaded-1 exist before the run
	runID     int // keeps this run's logins apart from other runs'
	// stop, when closed, ends the run before its deadline (nil: never).
	stop <-chan struct{}
}

// worker is one client of the session workload. It owns the preloaded
// sessions whose number is its id modulo the number of clients, plus those
// it logs in, so workers never share a session and need no locks.
type worker struct {
	id     int
	spec   mixSpec
	live   []uint64
	out    []uint64 // preloaded sessions logged out
	logins uint64
	rng    *rand.Rand
	rec    *recorder
	counts [numOps]int64
	misses int64
	writes int64 // writes that changed a document
	errs   int64
	err    error // the first error
}

func newWorker(id int, spec mixSpec, spans []span) *worker {
	w := &worker{id: id, spec: spec, rec: newRecorder(spans...),
		rng: rand.New(rand.NewPCG(uint64(spec.runID), uint64(id)))}
	for i := id; i < spec.preloaded; i += spec.clients {
		w.live = append(w.live, uint64(i))
	}
	return w
}

// run issues operations back to back until the deadline.
func (w *worker) run(ctx context.Context, st sessionStore, deadline time.Time) {
	for ctx.Err() == nil {
		start := time.Now()
		if !start.Before(deadline) || w.stopped() {
			return
		}
		op := pickOp(w.rng.IntN(100))
		if len(w.live) == 0 {
			op = opLogin
		}
		ok, err := w.do(ctx, st, op, start)
		end := time.Now()
		w.counts[op]++
		switch {
		case err != nil:
			w.errs++
			if w.err == nil {
				w.err = err
			}
		case !ok:
			w.misses++
		case op != opVerify:
			w.writes++
		}
		w.rec.add(end, end.Sub(start))
	}
}

func (w *worker) stopped() bool {
	select {
	case <-w.spec.stop:
		return true
	default:
		return false
	}
}

func (w *worker) do(ctx context.Context, st sessionStore, op opKind, now time.Time) (bool, error) {
	switch op {
	case opTouch:
		return st.touch(ctx, token(w.pick()), now)
	case opVerify:
		return st.verify(ctx, token(w.pick()))
	case opLogin:
		n := loginBase(w.spec.runID) + uint64(w.id) + uint64(w.spec.clients)*w.logins
		w.logins++
		w.live = append(w.live, n)
		return true, st.login(ctx, token(n), userID(n), now)
	default:
		i := w.rng.IntN(len(w.live))
		n := w.live[i]
		w.live[i] = w.live[len(w.live)-1]
		w.live = w.live[:len(w.live)-1]
		if n < uint64(w.spec.preloaded) {
			w.out = append(w.out, n)
		}
		return st.logout(ctx, token(n))
	}
}

func (w *worker) pick() uint64 { return w.live[w.rng.IntN(len(w.live))] }

// restore logs out the sessions w logged in and logs in again the
// preloaded ones it logged out, unmeasured.
func (w *worker) restore(ctx context.Context, st sessionStore) error {
	for _, n := range w.live {
		if n < uint64(w.spec.preloaded) {
			continue
		}
		// Not found is no error: a login that failed may have stored nothing.
		if _, err := st.logout(ctx, token(n)); err != nil {
			return fmt.Errorf("restore: log out session %d: %w", n, err)
		}
	}
	now := time.Now()
	for _, n := range w.out {
		if err := st.login(ctx, token(n), userID(n), now); err != nil {
			return fmt.Errorf("restore: log in session %d again: %w", n, err)
		}
	}
	return nil
}

// MixResult is what the workers did over the whole run.
type MixResult struct {
	Ops      map[string]int64 `json:"ops"`
	Misses   int64            `json:"misses"`
	Writes   int64            `json:"writes"` // touches, logins and logouts that changed a document
	Errors   int64            `json:"errors"`
	FirstErr string           `json:"first_error,omitempty"`
}

// add counts o's operations into r; r keeps its first error.
func (r *MixResult) add(o MixResult) {
	for k, c := range o.Ops {
		r.Ops[k] += c
	}
	r.Misses += o.Misses
	r.Writes += o.Writes
	r.Errors += o.Errors
	if r.FirstErr == "" {
		r.FirstErr = o.FirstErr
	}
}

// runMix runs spec.clients workers on st until deadline and returns the
// merged recorder and counts, and restore, which puts the sessions back
// as they were before the run (every worker's restore, unmeasured): a
// later run on the same server then starts from the preloaded sessions
// its workers assume, instead of missing those this one logged out.
func runMix(ctx context.Context, st sessionStore, spec mixSpec, spans []span, deadline time.Time) (rec *recorder, res MixResult, restore func(context.Context) error) {
	workers := make([]*worker, spec.clients)
	var wg sync.WaitGroup
	for i := range workers {
		workers[i] = newWorker(i, spec, spans)
		wg.Go(func() { workers[i].run(ctx, st, deadline) })
	}
	wg.Wait()
	restore = func(ctx context.Context) error {
		errs := make([]error, len(workers))
		var wg sync.WaitGroup
		for i, w := range workers {
			wg.Go(func() { errs[i] = w.restore(ctx, st) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	rec = newRecorder(spans...)
	res = MixResult{Ops: map[string]int64{}}
	for _, w := range workers {
		rec.merge(w.rec)
		for k, c := range w.counts {
			res.Ops[opKind(k).String()] += c
		}
		res.Misses += w.misses
		res.Writes += w.writes
		res.Errors += w.errs
		if w.err != nil && res.FirstErr == "" {
			res.FirstErr = w.err.Error()
		}
	}
	return rec, res, restore
}
