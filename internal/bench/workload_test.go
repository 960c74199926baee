package bench

import (
	"context"
	"sync"
	"testing"
	"time"
)

// mapStore is a sessionStore in memory.
type mapStore struct {
	mu       sync.Mutex
	sessions map[string]bool
}

func newMapStore(preloaded int) *mapStore {
	st := &mapStore{sessions: map[string]bool{}}
	for n := range uint64(preloaded) {
		st.sessions[token(n)] = true
	}
	return st
}

func (st *mapStore) has(tok string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.sessions[tok]
}

func (st *mapStore) touch(_ context.Context, tok string, _ time.Time) (bool, error) {
	return st.has(tok), nil
}

func (st *mapStore) verify(_ context.Context, tok string) (bool, error) { return st.has(tok), nil }

func (st *mapStore) login(_ context.Context, tok string, _ int64, _ time.Time) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sessions[tok] = true
	return nil
}

func (st *mapStore) logout(_ context.Context, tok string) (bool, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	found := st.sessions[tok]
	delete(st.sessions, tok)
	return found, nil
}

func (st *mapStore) close(context.Context) error { return nil }

// TestRunsOnOneServerStartAlike: a sessions job puts the preloaded
// sessions back after its measured window (runMix's restore), so the next round on the same
// server finds every session its workers pick; without the restore, a
// second round missed about a fifth of its operations (the sessions the
// first logged out).
func TestRunsOnOneServerStartAlike(t *testing.T) {
	const preloaded = 2000
	for _, restore := range []bool{true, false} {
		st := newMapStore(preloaded)
		var misses []int64
		for run := range 3 {
			spec := mixSpec{clients: 8, preloaded: preloaded, runID: run}
			_, mix, putBack := runMix(context.Background(), st, spec, nil, time.Now().Add(50*time.Millisecond))
			if restore {
				if err := putBack(context.Background()); err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
			}
			if mix.Ops["logout"] == 0 {
				t.Fatalf("restore=%v run %d logged out nothing: %v", restore, run, mix.Ops)
			}
			misses = append(misses, mix.Misses)
		}
		switch {
		case misses[0] != 0:
			t.Errorf("restore=%v: the first run missed %d", restore, misses[0])
		case restore && (misses[1] != 0 || misses[2] != 0):
			t.Errorf("with restore, later runs missed %v", misses)
		case !restore && misses[1] == 0:
			t.Errorf("without restore the second run missed nothing: the test cannot tell")
		}
		if restore && len(st.sessions) != preloaded {
			t.Errorf("after restored runs the store holds %d sessions, want the %d preloaded", len(st.sessions), preloaded)
		}
	}
}
