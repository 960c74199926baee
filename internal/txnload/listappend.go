package txnload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"github.com/mayflydb/mayfly/internal/txncheck"
)

// ListAppendClient runs one list-append transaction: its appends and
// reads in order, all or nothing. It returns a copy of the micro-ops with
// each read's list filled in (ops itself is the recorded invocation and
// must not change), and an error wrapping ErrAborted when the transaction
// certainly did not commit.
type ListAppendClient interface {
	ListAppend(ctx context.Context, ops []txncheck.MicroOp) ([]txncheck.MicroOp, error)
}

// ListAppendConfig is a list-append load: each transaction has 1..MaxOps
// micro-ops, reads and appends in equal measure, over Keys keys. Few keys
// and many clients make conflicts, which is the point.
type ListAppendConfig struct {
	Load
	Keys   int
	MaxOps int
}

// RunListAppend runs the load through client and records it in rec.
// Every appended value is unique (one counter across keys), as the
// checker requires.
func RunListAppend(ctx context.Context, cfg ListAppendConfig, client ListAppendClient,
	rec *Recorder[[]txncheck.MicroOp]) error {
	if cfg.Keys < 1 || cfg.MaxOps < 1 {
		return fmt.Errorf("txnload: list-append needs keys and micro-ops, got %d keys and %d ops", cfg.Keys, cfg.MaxOps)
	}
	var lastValue atomic.Int64
	return runLoad(ctx, cfg.Load, rec, workload[[]txncheck.MicroOp]{
		generate: func(rng *rand.Rand) []txncheck.MicroOp { return generateListAppend(rng, cfg, &lastValue) },
		run:      client.ListAppend,
	})
}

func generateListAppend(rng *rand.Rand, cfg ListAppendConfig, lastValue *atomic.Int64) []txncheck.MicroOp {
	ops := make([]txncheck.MicroOp, 1+rng.IntN(cfg.MaxOps))
	for i := range ops {
		key := rng.IntN(cfg.Keys)
		if rng.IntN(2) == 0 {
			ops[i] = txncheck.ReadOp(key)
		} else {
			ops[i] = txncheck.AppendOp(key, int(lastValue.Add(1)))
		}
	}
	return ops
}

// ListAppendHistory turns a recorded history into the checker's input:
// committed transactions with their reads, failed ones with their
// appends, and indeterminate ones (an info completion, or none) with
// their appends and no reads.
func ListAppendHistory(events []Event[[]txncheck.MicroOp]) ([]txncheck.Txn, error) {
	pairs, err := Pair(events)
	if err != nil {
		return nil, err
	}
	history := make([]txncheck.Txn, 0, len(pairs))
	for _, p := range pairs {
		txn := txncheck.Txn{ID: p.Invocation.Txn, Process: p.Invocation.Process, Status: p.Status, Ops: p.Invocation.Op}
		if p.Status == txncheck.Committed {
			if err := sameShape(p.Invocation.Op, p.Op); err != nil {
				return nil, fmt.Errorf("txnload: transaction %d: %w", txn.ID, err)
			}
			txn.Ops = p.Op
		}
		history = append(history, txn)
	}
	return history, nil
}

// sameShape checks that a completion reports the micro-ops invoked, so a
// client cannot silently change what a transaction did.
func sameShape(invoked, done []txncheck.MicroOp) error {
	same := slices.EqualFunc(invoked, done, func(a, b txncheck.MicroOp) bool {
		return a.Kind == b.Kind && a.Key == b.Key && a.Value == b.Value
	})
	if !same {
		return fmt.Errorf("completed as %v, invoked as %v", done, invoked)
	}
	return nil
}

// CheckListAppend checks a recorded list-append run: its history, the
// checker's result, and how many transactions ended each way.
func CheckListAppend(events []Event[[]txncheck.MicroOp]) (txncheck.Result, map[txncheck.Status]int, error) {
	history, err := ListAppendHistory(events)
	if err != nil {
		return txncheck.Result{}, nil, err
	}
	res, err := txncheck.Check(history)
	if err != nil {
		return txncheck.Result{}, nil, err
	}
	counts := map[txncheck.Status]int{}
	for _, txn := range history {
		counts[txn.Status]++
	}
	return res, counts, nil
}
