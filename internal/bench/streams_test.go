package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func eventDoc(t *testing.T, wall time.Time, token string) bson.D {
	t.Helper()
	return bson.D{{Key: "operationType", Value: "insert"},
		{Key: "wallTime", Value: bson.NewDateTimeFromTime(wall)},
		{Key: "fullDocument", Value: bson.D{{Key: "token", Value: token}}}}
}

func reply(t *testing.T, events ...bson.D) bson.Raw {
	t.Helper()
	if events == nil {
		events = []bson.D{} // an empty array, not null
	}
	return mustMarshal(t, bson.D{{Key: "cursor", Value: bson.D{{Key: "id", Value: int64(7)},
		{Key: "nextBatch", Value: events}}}, {Key: "ok", Value: 1.0}})
}

func TestStreamConsumerBatchCountsEventsAndLag(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	c := &streamConsumer{marker: "end"}
	done, err := c.batch(reply(t, eventDoc(t, now.Add(-5*time.Millisecond), "a"),
		eventDoc(t, now.Add(-20*time.Millisecond), "b")), now)
	if err != nil || done {
		t.Fatalf("first batch: done %v, err %v", done, err)
	}
	if c.events != 2 || c.lag.Count() != 2 || c.lag.Max() < 20*time.Millisecond {
		t.Fatalf("events %d, lags %d, max lag %v", c.events, c.lag.Count(), c.lag.Max())
	}
	done, err = c.batch(reply(t, eventDoc(t, now, "end")), now)
	if err != nil || !done || c.events != 3 {
		t.Fatalf("marker batch: done %v, err %v, events %d", done, err, c.events)
	}
	if done, err = c.batch(reply(t), now); err != nil || done {
		t.Fatalf("empty batch: done %v, err %v", done, err)
	}
	if _, err := c.batch(mustMarshal(t, bson.D{{Key: "ok", Value: 1.0}}), now); err == nil {
		t.Fatal("a reply without nextBatch was accepted")
	}
}

func mustMarshal(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestExpiryStreamBatchMeasuresLateness(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_000)
	expiry := func(late time.Duration, pre bool) bson.D {
		d := bson.D{{Key: "operationType", Value: "delete"},
			{Key: "wallTime", Value: bson.NewDateTimeFromTime(at.Add(late))},
			{Key: "expired", Value: bson.D{{Key: "index", Value: stormIndex}, {Key: "expiredAt", Value: bson.NewDateTimeFromTime(at)}}}}
		if pre {
			d = append(d, bson.E{Key: "fullDocumentBeforeChange", Value: bson.D{{Key: "_id", Value: 1}}})
		}
		return d
	}
	s := &expiryStream{}
	if err := s.batch(reply(t, expiry(30*time.Millisecond, true), expiry(90*time.Millisecond, false))); err != nil {
		t.Fatal(err)
	}
	if s.res.Events != 2 || s.res.WithPreImage != 1 || s.late.Max() < 90*time.Millisecond || s.late.Quantile(0.5) > 40*time.Millisecond {
		t.Fatalf("events %d, with pre-image %d, lateness max %v p50 %v", s.res.Events, s.res.WithPreImage, s.late.Max(), s.late.Quantile(0.5))
	}
	if err := s.batch(reply(t, eventDoc(t, at, "x"))); err == nil {
		t.Fatal("an event without expired.expiredAt was counted")
	}
}

func TestStreamsCellIsTheMeanOfRoundsOnOneServer(t *testing.T) {
	run := func(ops float64, streams bool) *SessionsResult {
		r := &SessionsResult{WindowResult: WindowResult{OpsPerSec: ops}}
		if streams {
			r.Streams = &StreamsResult{Streams: 10, MinEvents: int64(ops)}
		}
		return r
	}
	m := &ModeReport{StreamRounds: []*SessionsResult{
		run(1000, false), run(950, true), run(850, true), run(800, false)}}
	// (950+850)/2 over (1000+800)/2: 1.00, whatever the order.
	if got := streamsCell(m); !strings.HasPrefix(got, "1.00 (900 / 900 ops/s over 2 rounds each; 10 streams × ≥ 850 events") {
		t.Errorf("streamsCell = %q", got)
	}
	m.StreamRounds = m.StreamRounds[:2]
	if got := streamsCell(m); !strings.HasPrefix(got, "0.95 ") {
		t.Errorf("streamsCell of one round each = %q", got)
	}
	m.StreamRounds = m.StreamRounds[1:]
	if got := streamsCell(m); got != missing {
		t.Errorf("streamsCell without a round without streams = %q, want %q", got, missing)
	}
	if got := fmt.Sprint(streamRoundStreams(10)); got != "[0 10 10 0 0 10 10 0]" {
		t.Errorf("streamRoundStreams(10) = %v, want twice without, with, with, without", got)
	}
}
