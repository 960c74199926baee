package txnload

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/mayflydb/mayfly/internal/txncheck"
)

// Load is the shape every workload shares: Clients concurrent clients run
// Txns transactions between them, or fewer if the context ends first.
type Load struct {
	Clients int
	Txns    int
	// Seed makes the generated operations repeatable: client c draws from
	// a generator seeded with (Seed, c).
	Seed uint64
}

func (l Load) validate() error {
	if l.Clients < 1 || l.Txns < 1 {
		return errors.New("txnload: a load needs at least one client and one transaction")
	}
	return nil
}

// workload is one kind of transaction: how to draw the next one and how
// to run it (returning it with its reads filled in).
type workload[Op any] struct {
	generate func(rng *rand.Rand) Op
	run      func(ctx context.Context, op Op) (Op, error)
}

// runLoad runs the load's clients until Txns transactions have started
// or ctx ends, recording every invocation and completion. A client whose
// transaction ended with an unknown outcome continues as a new process,
// as Jepsen's do: the old one may still be running on the server.
func runLoad[Op any](ctx context.Context, load Load, rec *Recorder[Op], w workload[Op]) error {
	if err := load.validate(); err != nil {
		return err
	}
	var started atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, load.Clients)
	for client := range load.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[client] = runClient(ctx, load, client, &started, rec, w)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func runClient[Op any](ctx context.Context, load Load, client int, started *atomic.Int64,
	rec *Recorder[Op], w workload[Op]) error {
	rng := rand.New(rand.NewPCG(load.Seed, uint64(client)))
	process := client
	for ctx.Err() == nil && started.Add(1) <= int64(load.Txns) {
		op := w.generate(rng)
		txn := rec.Invoke(process, op)
		done, err := w.run(ctx, op)
		outcome, recErr := rec.Complete(txn, done, err)
		if recErr != nil {
			return recErr
		}
		if outcome == txncheck.Indeterminate {
			process += load.Clients
		}
	}
	return nil
}
