package shardstate

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/migrate"
)

// TestRepeatedMoveJoinsTheRunningOne: a request identical to the
// donation in progress (a client's retry after its router restarted or
// it timed out) waits for that donation and answers with its outcome; a
// request whose context ends first returns, the donation going on.
func TestRepeatedMoveJoinsTheRunningOne(t *testing.T) {
	m := NewMigrations(MigrationOptions{})
	req := MoveRequest{Namespace: "db.c", ToShard: "shB",
		Range: migrate.Range{Min: bson.D{{Key: "k", Value: 0}}, Max: bson.D{{Key: "k", Value: 10}}}}
	running := &donation{req: req, done: make(chan struct{})}
	if err := m.claimDonation("mig", running); err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.MoveRange(gone, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("a request whose client left: %v, want its context's error", err)
	}
	joined := make(chan error, 1)
	go func() { joined <- m.MoveRange(context.Background(), req) }()
	select {
	case err := <-joined:
		t.Fatalf("the repeated request returned %v before the donation ended", err)
	case <-time.After(100 * time.Millisecond):
	}
	outcome := errors.New("the donation's outcome")
	running.err = outcome
	close(running.done)
	select {
	case err := <-joined:
		if !errors.Is(err, outcome) {
			t.Fatalf("the repeated request answered %v, want the donation's outcome", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the repeated request did not return once the donation ended")
	}
	m.release("mig")
	if m.runningDonation(req) != nil {
		t.Fatal("a released donation is still joinable")
	}
}
