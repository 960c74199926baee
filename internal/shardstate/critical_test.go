package shardstate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestCriticalSectionPassesTheLogBarrierAfterDraining: the critical
// section waits for the routed commands in flight, then for the writes
// they proposed (the log barrier), in that order, and holds new ones
// off; a barrier that fails leaves no critical section behind.
func TestCriticalSectionPassesTheLogBarrierAfterDraining(t *testing.T) {
	var inflightAtBarrier atomic.Int64
	inflightAtBarrier.Store(-1)
	var m *Migrations
	m = NewMigrations(MigrationOptions{Barrier: func(context.Context) error {
		m.mu.Lock()
		inflightAtBarrier.Store(int64(m.inflight["db.c"]))
		m.mu.Unlock()
		return nil
	}})
	m.loaded = true // no records to read
	leave, err := m.Enter(context.Background(), "db.c")
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan error, 1)
	go func() { entered <- m.enterCriticalSection(context.Background(), "db.c") }()
	time.Sleep(100 * time.Millisecond)
	if got := inflightAtBarrier.Load(); got != -1 {
		t.Fatalf("the barrier ran with a routed command still in flight (%d)", got)
	}
	leave()
	if err := <-entered; err != nil {
		t.Fatal(err)
	}
	if got := inflightAtBarrier.Load(); got != 0 {
		t.Fatalf("the barrier ran with %d routed commands in flight, want 0", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Enter(ctx, "db.c"); mongoerr.As(err).Code != mongoerr.StaleConfig {
		t.Fatalf("a routed command in the critical section: %v, want StaleConfig", err)
	}

	failing := NewMigrations(MigrationOptions{Barrier: func(context.Context) error { return errors.New("not primary") }})
	failing.loaded = true
	if err := failing.enterCriticalSection(context.Background(), "db.c"); err == nil {
		t.Fatal("a failed barrier entered the critical section")
	}
	release, err := failing.Enter(context.Background(), "db.c")
	if err != nil {
		t.Fatalf("after a failed barrier, a routed command: %v", err)
	}
	release()
}

// seqRunner answers a recipient's numbered pulls with empty batches,
// noting each number; the first request of each command waits until its
// caller gives up, as a poll that _recvChunkCommit interrupts does.
type seqRunner struct {
	mu   sync.Mutex
	seqs map[string][]int64
}

func (r *seqRunner) Run(ctx context.Context, _, _ string, cmd bson.D) (bson.D, error) {
	seq, _ := bsonFieldAny(cmd, "seq")
	r.mu.Lock()
	r.seqs[cmd[0].Key] = append(r.seqs[cmd[0].Key], seq.(int64))
	first := len(r.seqs[cmd[0].Key]) == 1
	r.mu.Unlock()
	if first {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return bson.D{{Key: "ok", Value: 1.0}}, nil
}

// TestInterruptedPullAsksAgainWithItsNumber: a numbered pull whose reply
// never came is asked again with the same number, so that the donor
// answers the batch it already took off its list; the number moves on
// only after an answer is applied. Every numbered pull of the recipient
// is a row.
func TestInterruptedPullAsksAgainWithItsNumber(t *testing.T) {
	pulls := map[string]func(m *Migrations, ctx context.Context, rc *receiver) error{
		"_transferMods": func(m *Migrations, ctx context.Context, rc *receiver) error {
			_, err := m.applyMods(ctx, rc)
			return err
		},
		"_migrateClone": func(m *Migrations, ctx context.Context, rc *receiver) error {
			return m.clone(ctx, rc)
		},
		"_getNextSessionMods": func(m *Migrations, ctx context.Context, rc *receiver) error {
			return m.pullSessions(ctx, rc)
		},
	}
	for name, pull := range pulls {
		runner := &seqRunner{seqs: map[string][]int64{}}
		m := NewMigrations(MigrationOptions{Client: runner})
		rc := &receiver{req: RecvRequest{MigrationID: "m1", From: "donor:1"}}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		if err := pull(m, ctx, rc); err == nil {
			t.Fatalf("%s: the interrupted pull reported no error", name)
		}
		cancel()
		if err := pull(m, context.Background(), rc); err != nil {
			t.Fatalf("%s: the pull after: %v", name, err)
		}
		if got := runner.seqs[name]; len(got) != 2 || got[0] != got[1] {
			t.Errorf("%s: numbers sent %v, want the interrupted one twice", name, got)
		}
	}
}
