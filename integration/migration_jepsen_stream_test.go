package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// jepsenEvent is what the change-stream checker keeps of one event.
type jepsenEvent struct {
	op          string
	id          int32
	clusterTime bson.Timestamp
	wall        time.Time // the event's wallTime, to set beside the faults and moves
}

// jepsenStream watches the collection through the router for the whole
// run. The driver resumes it across router kills by its resume token;
// when a fault outlasts the client's timeout the stream ends with a
// timeout, and, as an application does, the reader opens it again after
// its last token, so that a slow fault costs a reopen, never an event.
type jepsenStream struct {
	mu      sync.Mutex
	events  []jepsenEvent
	err     error // what ended the stream, if not the end of the run
	reopens int   // streams opened again after their last event's token
	done    chan struct{}
}

// sentinelID is inserted once the run is over: the stream has seen
// everything before it once the sentinel's event arrives.
const sentinelID = int32(-1)

// maxStreamReopens bounds the reopens of one run: every fault may cost
// one, and a run has at most 90 faults.
const maxStreamReopens = 100

func watchJepsen(coll *mongo.Collection) (*jepsenStream, error) {
	cs, err := coll.Watch(context.Background(), mongo.Pipeline{})
	if err != nil {
		return nil, err
	}
	s := &jepsenStream{done: make(chan struct{})}
	go s.read(coll, cs)
	return s, nil
}

func (s *jepsenStream) read(coll *mongo.Collection, cs *mongo.ChangeStream) {
	defer close(s.done)
	for {
		sentinel, err := s.drain(cs)
		token, ended := cs.ResumeToken(), cs.Err()
		_ = cs.Close(context.Background())
		if sentinel || err != nil {
			if err != nil {
				s.fail(err)
			}
			return
		}
		if s.reopens == maxStreamReopens {
			s.fail(fmt.Errorf("the stream ended %d times: %v", s.reopens+1, ended))
			return
		}
		if cs, err = reopenStream(coll, token, ended); err != nil {
			s.fail(err)
			return
		}
		s.mu.Lock()
		s.reopens++
		s.mu.Unlock()
	}
}

// drain keeps the stream's events until the sentinel's (true), or the
// stream ends (false, with an error only for an event it cannot read).
func (s *jepsenStream) drain(cs *mongo.ChangeStream) (bool, error) {
	for cs.Next(context.Background()) {
		var ev struct {
			Op          string         `bson:"operationType"`
			ClusterTime bson.Timestamp `bson:"clusterTime"`
			WallTime    time.Time      `bson:"wallTime"`
			Key         struct {
				ID any `bson:"_id"`
			} `bson:"documentKey"`
		}
		if err := cs.Decode(&ev); err != nil {
			return false, fmt.Errorf("decode an event: %w", err)
		}
		id, ok := numericID(ev.Key.ID)
		if !ok {
			return false, fmt.Errorf("an event of _id %v (%T), not one the workload writes", ev.Key.ID, ev.Key.ID)
		}
		s.mu.Lock()
		s.events = append(s.events, jepsenEvent{op: ev.Op, id: id, clusterTime: ev.ClusterTime, wall: ev.WallTime})
		s.mu.Unlock()
		if ev.Op == "insert" && id == sentinelID {
			return true, nil
		}
	}
	return false, nil
}

// reopenStream opens the stream again after token, once the error that
// ended it is one an application resumes after: a timeout, a network
// error or a resumable one. The router may still be down: it tries for
// a minute.
func reopenStream(coll *mongo.Collection, token bson.Raw, ended error) (*mongo.ChangeStream, error) {
	var se mongo.ServerError
	resumable := mongo.IsTimeout(ended) || mongo.IsNetworkError(ended) ||
		(errors.As(ended, &se) && se.HasErrorLabel("ResumableChangeStreamError"))
	if !resumable || token == nil {
		return nil, fmt.Errorf("the stream ended: %v", ended)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		cs, err := coll.Watch(context.Background(), mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(token))
		if err == nil {
			return cs, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the stream ended (%v) and could not be reopened: %w", ended, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// numericID is an event's _id as the workload's int32. A TTL deletion's
// event carries the _id decoded from its index key, a number of equal
// value that may be another numeric type (docs/design/0012).
func numericID(v any) (int32, bool) {
	switch n := v.(type) {
	case int32:
		return n, true
	case int64:
		return int32(n), int64(int32(n)) == n
	case float64:
		return int32(n), float64(int32(n)) == n
	}
	return 0, false
}

func (s *jepsenStream) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// finish inserts the sentinel and waits for its event.
func (s *jepsenStream) finish(coll *mongo.Collection) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: sentinelID}}); err != nil {
		return fmt.Errorf("insert the sentinel: %w", err)
	}
	select {
	case <-s.done:
	case <-time.After(90 * time.Second):
		return fmt.Errorf("no event of the sentinel within 90 s (%d events seen)", len(s.snapshot()))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *jepsenStream) snapshot() []jepsenEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]jepsenEvent(nil), s.events...)
}

// checkStream: every acknowledged durable insert shows once as an insert
// and never as a delete, no document shows two inserts, each register's
// updates are no fewer than its acknowledged compare-and-sets and no
// more than those plus the ones whose outcome is unknown, no document
// shows two deletes, and cluster times never go back. Migration copies,
// range deletions and the expiry of orphan copies would show as extra
// inserts and deletes.
func checkStream(events []jepsenEvent, run *jepsenRun) []string {
	var bad []string
	note := func(format string, args ...any) {
		if len(bad) < 20 {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	inserts, deletes, updates := map[int32]int{}, map[int32]int{}, map[int32]int{}
	var last bson.Timestamp
	for i, ev := range events {
		if tsBefore(ev.clusterTime, last) {
			note("event %d (%s of %d) at cluster time %v, after one at %v", i, ev.op, ev.id, ev.clusterTime, last)
		}
		last = ev.clusterTime
		switch ev.op {
		case "insert":
			inserts[ev.id]++
		case "delete":
			deletes[ev.id]++
		case "update", "replace":
			updates[ev.id]++
		default:
			note("event %d: %s of %d, not a write of the workload", i, ev.op, ev.id)
		}
	}
	for id, n := range inserts {
		if n > 1 {
			note("_id %d inserted %d times in the stream", id, n)
		}
	}
	for id, n := range deletes {
		// An expiring document's orphan copy is deleted silently
		// (docs/design/0014, "Orphans and expiry"): once is all.
		if n > 1 {
			note("_id %d deleted %d times in the stream: %s", id, n, eventsOf(events, id))
		}
	}
	for _, id := range run.acked {
		if inserts[id] != 1 || deletes[id] != 0 {
			note("acknowledged durable _id %d: %d inserts and %d deletes in the stream, want 1 and 0", id, inserts[id], deletes[id])
		}
	}
	acked, unknown := casCounts(run.history)
	for key := range int32(jepsenKeys) {
		if updates[key] < acked[key] || updates[key] > acked[key]+unknown[key] {
			note("register %d: %d updates in the stream, %d compare-and-sets acknowledged and %d unknown", key, updates[key], acked[key], unknown[key])
		}
		if deletes[key] != 0 {
			note("register %d deleted %d times in the stream", key, deletes[key])
		}
	}
	return bad
}

// casCounts counts each register's acknowledged and unknown
// compare-and-sets.
func casCounts(history []porcupine.Operation) (acked, unknown map[int32]int) {
	acked, unknown = map[int32]int{}, map[int32]int{}
	for _, op := range history {
		in, out := op.Input.(casInput), op.Output.(casOutput)
		if in.Kind != "cas" {
			continue
		}
		switch {
		case out.Unknown:
			unknown[in.Key]++
		case out.OK:
			acked[in.Key]++
		}
	}
	return acked, unknown
}

// eventsOf lists the events of one _id, with their times, for a failure
// message.
func eventsOf(events []jepsenEvent, id int32) string {
	var out []string
	for _, ev := range events {
		if ev.id == id {
			out = append(out, fmt.Sprintf("%s at %v (%s)", ev.op, ev.clusterTime, ev.wall.UTC().Format("15:04:05.000")))
		}
	}
	return strings.Join(out, ", ")
}
