package txnload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mayflydb/mayfly/internal/txncheck"
)

// fault is what a fake does to one transaction, chosen by its call
// number so the counts of each do not depend on scheduling.
type fault uint8

const (
	noFault fault = iota
	abortBefore
	commitThenLoseReply
	loseBeforeCommit
)

// faultFor gives every 7th call an abort, every 11th a commit whose
// reply is lost, every 13th a loss before the commit.
func faultFor(call int) fault {
	switch {
	case call%7 == 3:
		return abortBefore
	case call%11 == 5:
		return commitThenLoseReply
	case call%13 == 6:
		return loseBeforeCommit
	}
	return noFault
}

var errLostReply = errors.New("fake: connection reset while committing")

// faultCounts counts the faults a fake dealt.
type faultCounts map[fault]int

// fakeLists is an in-memory list-append store whose transactions run one
// at a time under a mutex: serializable. With staleReads set, reads come
// from the state that many transactions ago (plus the transaction's own
// appends), which breaks isolation.
type fakeLists struct {
	mu         sync.Mutex
	lists      map[int][]int
	past       []map[int][]int
	staleReads int
	calls      int
	dealt      faultCounts
}

func newFakeLists(staleReads int) *fakeLists {
	return &fakeLists{lists: map[int][]int{}, staleReads: staleReads, dealt: faultCounts{}}
}

func (f *fakeLists) ListAppend(_ context.Context, ops []txncheck.MicroOp) ([]txncheck.MicroOp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	kind := faultFor(f.calls)
	f.dealt[kind]++
	switch kind {
	case abortBefore:
		return nil, fmt.Errorf("%w: fake: WriteConflict", ErrAborted)
	case loseBeforeCommit:
		return nil, errLostReply
	}
	done := slices.Clone(ops)
	working := f.copyLists(f.lists)
	readFrom := working
	stale := f.staleReads > 0 && len(f.past) >= f.staleReads
	if stale {
		readFrom = f.copyLists(f.past[len(f.past)-f.staleReads])
	}
	for i := range done {
		if done[i].Kind == txncheck.Append {
			working[done[i].Key] = append(working[done[i].Key], done[i].Value)
			if stale {
				readFrom[done[i].Key] = append(readFrom[done[i].Key], done[i].Value)
			}
			continue
		}
		done[i].List = slices.Clone(readFrom[done[i].Key])
	}
	if f.staleReads > 0 {
		f.past = append(f.past, f.lists)
		if len(f.past) > f.staleReads {
			f.past = f.past[1:]
		}
	}
	f.lists = working
	if kind == commitThenLoseReply {
		return nil, errLostReply
	}
	return done, nil
}

func (f *fakeLists) copyLists(lists map[int][]int) map[int][]int {
	c := make(map[int][]int, len(lists))
	for k, v := range lists {
		c[k] = slices.Clone(v)
	}
	return c
}

// fakeBank is an in-memory bank under a mutex. With tornCommits set, a
// transfer whose commit reply is lost applies only its debit.
type fakeBank struct {
	mu          sync.Mutex
	balances    map[int]int64
	tornCommits bool
	calls       int
	dealt       faultCounts
}

func newFakeBank(accounts int, each int64, tornCommits bool) *fakeBank {
	b := &fakeBank{balances: map[int]int64{}, tornCommits: tornCommits, dealt: faultCounts{}}
	for account := range accounts {
		b.balances[account] = each
	}
	return b
}

func (b *fakeBank) deal() fault {
	b.calls++
	kind := faultFor(b.calls)
	b.dealt[kind]++
	return kind
}

func (b *fakeBank) Transfer(_ context.Context, from, to int, amount int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	kind := b.deal()
	switch kind {
	case abortBefore:
		return fmt.Errorf("%w: fake: WriteConflict", ErrAborted)
	case loseBeforeCommit:
		return errLostReply
	}
	if b.balances[from] < amount {
		return fmt.Errorf("%w: %w", ErrAborted, ErrInsufficientFunds)
	}
	b.balances[from] -= amount
	if kind == commitThenLoseReply && b.tornCommits {
		return errLostReply // the credit never lands
	}
	b.balances[to] += amount
	if kind == commitThenLoseReply {
		return errLostReply
	}
	return nil
}

func (b *fakeBank) ReadBalances(context.Context) (map[int]int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.deal() {
	case abortBefore:
		return nil, fmt.Errorf("%w: fake: SnapshotUnavailable", ErrAborted)
	case loseBeforeCommit, commitThenLoseReply:
		return nil, errLostReply
	}
	balances := make(map[int]int64, len(b.balances))
	for account, balance := range b.balances {
		balances[account] = balance
	}
	return balances, nil
}
