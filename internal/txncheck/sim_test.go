package txncheck

import (
	"math/rand/v2"
	"slices"
)

// simulator runs random list-append transactions from concurrent clients
// against an in-memory store and records the history the checker reads.
// With snapshot set it is snapshot isolation (reads at the start's
// snapshot, first-committer-wins); without, it is read committed (every
// read sees the latest commit, no conflict check).
type simulator struct {
	rng      *rand.Rand
	snapshot bool
	keys     int
	clock    int
	versions map[int][]version // key → committed appends in commit order
	nextVal  map[int]int
	history  []Txn
}

type version struct{ value, commitTS int }

// simTxn is a transaction in flight: its snapshot, its planned micro-ops
// (reads filled in as they run) and its buffered appends.
type simTxn struct {
	txn      Txn
	start    int
	next     int
	appended map[int][]int
}

func newSimulator(seed uint64, snapshot bool, keys int) *simulator {
	return &simulator{rng: rand.New(rand.NewPCG(seed, seed*31+7)), snapshot: snapshot, keys: keys,
		versions: map[int][]version{}, nextVal: map[int]int{}}
}

// run runs txns transactions from clients concurrent clients: at each
// step a random client takes its next micro-op, or commits.
func (s *simulator) run(txns, clients int) []Txn {
	active := make([]*simTxn, clients)
	started := 0
	for started < txns || slices.ContainsFunc(active, func(t *simTxn) bool { return t != nil }) {
		c := s.rng.IntN(clients)
		switch {
		case active[c] == nil && started < txns:
			started++
			active[c] = s.begin(started, c)
		case active[c] == nil:
		case active[c].next < len(active[c].txn.Ops):
			s.step(active[c])
		default:
			s.finish(active[c])
			active[c] = nil
		}
	}
	return s.history
}

func (s *simulator) begin(id, process int) *simTxn {
	t := &simTxn{txn: Txn{ID: id, Process: process}, start: s.clock, appended: map[int][]int{}}
	for range 1 + s.rng.IntN(4) {
		key := s.rng.IntN(s.keys)
		if s.rng.IntN(2) == 0 {
			t.txn.Ops = append(t.txn.Ops, ReadOp(key))
			continue
		}
		s.nextVal[key]++
		t.txn.Ops = append(t.txn.Ops, AppendOp(key, s.nextVal[key]))
	}
	return t
}

func (s *simulator) step(t *simTxn) {
	op := &t.txn.Ops[t.next]
	t.next++
	if op.Kind == Append {
		t.appended[op.Key] = append(t.appended[op.Key], op.Value)
		return
	}
	visibleAt := s.clock
	if s.snapshot {
		visibleAt = t.start
	}
	op.List = append(s.visible(op.Key, visibleAt), t.appended[op.Key]...)
}

// visible is a key's list as of a commit timestamp.
func (s *simulator) visible(key, ts int) []int {
	list := []int{}
	for _, v := range s.versions[key] {
		if v.commitTS <= ts {
			list = append(list, v.value)
		}
	}
	return list
}

// finish commits, or aborts on a write-write conflict under snapshot
// isolation. One transaction in twenty loses its outcome: it is recorded
// indeterminate, whichever way it went.
func (s *simulator) finish(t *simTxn) {
	t.txn.Status = Committed
	if s.snapshot && s.conflicts(t) {
		t.txn.Status = Aborted
	} else {
		s.clock++
		for key, values := range t.appended {
			for _, value := range values {
				s.versions[key] = append(s.versions[key], version{value, s.clock})
			}
		}
	}
	if s.rng.IntN(20) == 0 {
		t.txn.Status = Indeterminate
	}
	s.history = append(s.history, t.txn)
}

// conflicts reports first-committer-wins: another transaction committed
// an append to one of t's keys after t's snapshot.
func (s *simulator) conflicts(t *simTxn) bool {
	for key := range t.appended {
		if vs := s.versions[key]; len(vs) > 0 && vs[len(vs)-1].commitTS > t.start {
			return true
		}
	}
	return false
}
