package docstore

import (
	"context"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/expiryflight"
)

// TestSettleExpiriesWaitsForDecisionsTaken: SettleExpiries returns only
// once every expiry change decided before it is applied: one still
// under its documents' stripes (a synchronous batch being committed)
// and one handed to the collection's batches in flight (compact
// expiries on their way through the log). A collection with neither,
// or none at all, settles at once.
func TestSettleExpiriesWaitsForDecisionsTaken(t *testing.T) {
	s, _ := openStore(t)
	c := indexedColl(t, s, "c")
	ctx := context.Background()
	for _, name := range []string{"c", "missing"} {
		if err := s.SettleExpiries(ctx, "db", name); err != nil {
			t.Fatalf("quiet %s: %v", name, err)
		}
	}

	held := &lockSet{c: c}
	held.lockStripe(len(held.stripes) - 1)
	batch := expiryflight.NewBatch()
	ids := [][]byte{[]byte("x")}
	c.inFlight.Add(ids, batch)

	settled := make(chan error, 1)
	go func() { settled <- s.SettleExpiries(ctx, "db", "c") }()
	notYet := func(what string) {
		t.Helper()
		select {
		case err := <-settled:
			t.Fatalf("settled (%v) while %s", err, what)
		case <-time.After(100 * time.Millisecond):
		}
	}
	notYet("a batch held its stripe")
	held.release()
	notYet("a batch was in flight")
	c.inFlight.Finish(ids, batch, nil)
	select {
	case err := <-settled:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not settled 10 s after the last batch applied")
	}

	// A batch that never applies leaves it to the caller's deadline.
	c.inFlight.Add(ids, expiryflight.NewBatch())
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.SettleExpiries(short, "db", "c"); err == nil {
		t.Fatal("settled with a batch still in flight")
	}
}
