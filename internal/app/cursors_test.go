package app

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
)

type emptySource struct{}

func (emptySource) Next() (bson.D, bool, error) { return nil, false, nil }
func (emptySource) Close() error                { return nil }

// TestCursorsIdleByTheUnmovedClock: a test suite that moves the test clock
// an hour ahead (mayflyClockOffsetSeconds) to see documents expire keeps
// its open cursors: their idleness is measured on the clock the offset
// does not move.
func TestCursorsIdleByTheUnmovedClock(t *testing.T) {
	a, err := Start(Config{Addr: "127.0.0.1:0", InMemory: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		SetParameters: map[string]string{"enableTestCommands": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Shutdown(context.Background()) }()
	a.cursors.Add("db.c", emptySource{}, nil)
	a.cfg.Clock.(*clock.Offset).Set(time.Hour)
	if n := a.cursors.ReapIdle(); n != 0 {
		t.Fatalf("moving the test clock an hour closed %d idle cursor(s)", n)
	}
}
