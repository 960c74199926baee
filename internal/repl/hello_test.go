package repl

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// promotionHooks tells the test when the member became a writable
// primary: Promoted runs after the topology counter moved for it.
type promotionHooks struct {
	noHooks
	promoted chan struct{}
}

func (h promotionHooks) Promoted() { h.promoted <- struct{}{} }

// newLoneMember is a member of set rs0, started, not yet initiated.
func newLoneMember(t *testing.T) (*Replica, chan struct{}) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true, Logger: logger})
	if err != nil {
		t.Fatalf("open storage: %v", err)
	}
	rs, err := Open(Config{SetName: "rs0", Self: "127.0.0.1:50001", Base: eng, Logger: logger})
	if err != nil {
		t.Fatalf("open replica: %v", err)
	}
	promoted := make(chan struct{}, 4)
	if err := rs.Start(promotionHooks{promoted: promoted}); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		rs.Close()
		_ = eng.Close()
	})
	return rs, promoted
}

// awaitChange waits for the topology change a step started: until done
// returns true (a bounded wait) and the counter moved past from.
func awaitChange(t *testing.T, rs *Replica, from int64, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, counter := rs.TopologyChanges()
		if counter > from && done() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change did not finish within 20s (counter %d, was %d)", counter, from)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func awaitPromotion(t *testing.T, promoted chan struct{}) {
	t.Helper()
	select {
	case <-promoted:
	case <-time.After(20 * time.Second):
		t.Fatal("not promoted within 20s")
	}
}

func field(fields bson.D, key string) any {
	for _, e := range fields {
		if e.Key == key {
			return e.Value
		}
	}
	return nil
}

// Every topology change a member goes through, made while a hello reply
// is being built (between HelloAt's reads), leaves the reply's
// topologyVersion counter behind the member's: a driver that sends it
// with its next awaitable hello is answered at once with the change,
// rather than after maxAwaitTimeMS (its heartbeatFrequency, 10 s). The
// reply itself already shows the change. Rows: each way the counter moves
// on a lone member (changed's callers: config adopted at initiate and at
// reconfig, leadership and promotion); a step-down needs a second member
// and moves the counter on the same path as a step-up (noteSoftState).
func TestHelloIsNeverOlderThanItsTopologyVersion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before func(t *testing.T, rs *Replica, promoted chan struct{})
		change func(t *testing.T, rs *Replica, promoted chan struct{})
		shows  func(writable bool, fields bson.D) bool
	}{
		{
			name:   "initiate",
			before: func(*testing.T, *Replica, chan struct{}) {},
			change: func(t *testing.T, rs *Replica, _ chan struct{}) {
				_, from := rs.TopologyChanges()
				if err := rs.Initiate(nil); err != nil {
					t.Fatalf("initiate: %v", err)
				}
				awaitChange(t, rs, from, func() bool { return true })
			},
			shows: func(_ bool, fields bson.D) bool { return field(fields, "setName") == "rs0" },
		},
		{
			// Initiated, the member waits an election timeout (0.6–1.2 s)
			// before it campaigns: HelloAt's first read comes before.
			name: "step up",
			before: func(t *testing.T, rs *Replica, _ chan struct{}) {
				if err := rs.Initiate(nil); err != nil {
					t.Fatalf("initiate: %v", err)
				}
			},
			change: func(t *testing.T, _ *Replica, promoted chan struct{}) {
				awaitPromotion(t, promoted)
			},
			shows: func(writable bool, _ bson.D) bool { return writable },
		},
		{
			name: "reconfig",
			before: func(t *testing.T, rs *Replica, promoted chan struct{}) {
				if err := rs.Initiate(nil); err != nil {
					t.Fatalf("initiate: %v", err)
				}
				awaitPromotion(t, promoted)
			},
			change: func(t *testing.T, rs *Replica, _ chan struct{}) {
				doc := rs.Config().Doc()
				doc = append(withoutKey(doc, "version"), bson.E{Key: "version", Value: int32(rs.Config().Version + 1)})
				if err := rs.Reconfig(doc); err != nil {
					t.Fatalf("reconfig: %v", err)
				}
			},
			shows: func(_ bool, fields bson.D) bool { return field(fields, "setVersion") == int32(2) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, promoted := newLoneMember(t)
			tc.before(t, rs, promoted)
			rs.betweenHelloReads = func() { tc.change(t, rs, promoted) }
			writable, fields, counter := rs.HelloAt()
			rs.betweenHelloReads = nil
			if _, now := rs.TopologyChanges(); counter >= now {
				t.Errorf("the reply carries counter %d and the member is at %d: a driver awaiting the next change with it would wait out maxAwaitTimeMS", counter, now)
			}
			if !tc.shows(writable, fields) {
				t.Errorf("the reply does not show the change made before its fields were read: writable %v, %v", writable, fields)
			}
		})
	}
}

func withoutKey(d bson.D, key string) bson.D {
	out := bson.D{}
	for _, e := range d {
		if e.Key != key {
			out = append(out, e)
		}
	}
	return out
}
