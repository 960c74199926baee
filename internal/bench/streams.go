package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// StreamsResult is what the change streams open on the sessions
// collection during a session run received.
type StreamsResult struct {
	Streams int `json:"streams"`
	// Writes is the number of the workload's writes that changed a
	// document (and so each make one event), plus the closing marker.
	Writes int64 `json:"writes"`
	// MinEvents and MaxEvents are the fewest and most events one stream
	// received up to and including the marker.
	MinEvents int64 `json:"min_events"`
	MaxEvents int64 `json:"max_events"`
	// Lag is receipt minus the event's wallTime, over every event of
	// every stream (wallTime has millisecond precision).
	Lag     Summary `json:"lag"`
	GetMore int64   `json:"get_mores"` // getMore round trips, all streams
}

// streamAwait is each getMore's maxTimeMS: short, so a consumer sees the
// end marker soon after it is written.
const streamAwait = 200

// streamConsumer is one change stream read the way a consumer that keeps
// up reads it: raw batches, each event looked at for two fields only,
// none decoded into values.
type streamConsumer struct {
	db *mongo.Database
	// sess holds the cursor: a cursor is bound to the session that
	// opened it, so every getMore must name the same one.
	sess   *mongo.Session
	cursor int64
	marker string
	events int64
	rounds int64
	lag    Histogram
}

// openStreams opens n change streams on the sessions collection, each on
// its own connection of c, all before the workload's first write.
func openStreams(ctx context.Context, c *mongo.Client, n int, marker string) ([]*streamConsumer, error) {
	db := c.Database(benchDB)
	out := make([]*streamConsumer, n)
	for i := range out {
		var reply struct {
			Cursor struct {
				ID int64 `bson:"id"`
			} `bson:"cursor"`
		}
		sess, err := c.StartSession()
		if err != nil {
			return nil, fmt.Errorf("start a session for change stream %d: %w", i, err)
		}
		cmd := bson.D{{Key: "aggregate", Value: sessionsColl},
			{Key: "pipeline", Value: bson.A{bson.D{{Key: "$changeStream", Value: bson.D{}}}}},
			{Key: "cursor", Value: bson.D{}}}
		if err := db.RunCommand(mongo.NewSessionContext(ctx, sess), cmd).Decode(&reply); err != nil {
			return nil, fmt.Errorf("open change stream %d: %w", i, err)
		}
		out[i] = &streamConsumer{db: db, sess: sess, cursor: reply.Cursor.ID, marker: marker}
	}
	return out, nil
}

// run reads batches until it has seen the marker's insert.
func (s *streamConsumer) run(ctx context.Context) error {
	cmd := bson.D{{Key: "getMore", Value: s.cursor}, {Key: "collection", Value: sessionsColl},
		{Key: "maxTimeMS", Value: streamAwait}}
	ctx = mongo.NewSessionContext(ctx, s.sess)
	for {
		raw, err := s.db.RunCommand(ctx, cmd).Raw()
		if err != nil {
			return fmt.Errorf("getMore: %w", err)
		}
		s.rounds++
		done, err := s.batch(raw, time.Now())
		if err != nil || done {
			return err
		}
	}
}

// batch counts the events of one getMore reply and their lag, and says
// whether the marker was among them. It walks the batch once, without
// decoding it into values: ten streams read every write, so what a
// consumer spends per event weighs on the workload beside it.
func (s *streamConsumer) batch(reply bson.Raw, now time.Time) (bool, error) {
	arr, ok := reply.Lookup("cursor", "nextBatch").ArrayOK()
	if !ok {
		return false, errors.New("getMore reply without cursor.nextBatch")
	}
	done := false
	err := eachElement(bsoncore.Document(arr), func(e bsoncore.Element) error {
		ev, ok := e.Value().DocumentOK()
		if !ok {
			return errors.New("an event that is not a document")
		}
		s.events++
		wall, marked, err := s.look(ev)
		if wall != 0 {
			s.lag.Add(now.Sub(time.UnixMilli(wall)))
		}
		done = done || marked
		return err
	})
	if err != nil {
		return false, fmt.Errorf("nextBatch: %w", err)
	}
	return done, nil
}

// look reads an event's wallTime (0 without one) and whether it is the
// marker's insert, in one pass over its fields.
func (s *streamConsumer) look(ev bsoncore.Document) (wall int64, marked bool, err error) {
	err = eachElement(ev, func(e bsoncore.Element) error {
		switch e.Key() {
		case "wallTime":
			wall, _ = e.Value().DateTimeOK()
		case "fullDocument":
			if doc, ok := e.Value().DocumentOK(); ok {
				tok, ok := doc.Lookup("token").StringValueOK()
				marked = ok && tok == s.marker
			}
		}
		return nil
	})
	return wall, marked, err
}

// eachElement calls fn with each element of doc, in order.
func eachElement(doc bsoncore.Document, fn func(bsoncore.Element) error) error {
	_, rem, ok := bsoncore.ReadLength(doc)
	if !ok {
		return errors.New("a document too short for its length")
	}
	for len(rem) > 1 {
		var e bsoncore.Element
		if e, rem, ok = bsoncore.ReadElement(rem); !ok {
			return errors.New("a malformed element")
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// streamSet runs consumers until each has seen the marker.
type streamSet struct {
	consumers []*streamConsumer
	wg        sync.WaitGroup
	errs      []error
}

func (ss *streamSet) start(ctx context.Context) {
	ss.errs = make([]error, len(ss.consumers))
	for i, c := range ss.consumers {
		ss.wg.Go(func() { ss.errs[i] = c.run(ctx) })
	}
}

// finish writes the marker, waits for every consumer to read it, and
// sums up what they received. Each stream must have received an event
// for every write, less those that failed (a failed write may or may not
// have committed).
func (ss *streamSet) finish(ctx context.Context, st sessionStore, writes, failed int64, now time.Time) (*StreamsResult, error) {
	if err := st.login(ctx, ss.consumers[0].marker, 0, now); err != nil {
		return nil, fmt.Errorf("write the streams' end marker: %w", err)
	}
	ss.wg.Wait()
	if err := errors.Join(ss.errs...); err != nil {
		return nil, err
	}
	res := &StreamsResult{Streams: len(ss.consumers), Writes: writes + 1, MinEvents: -1}
	var lag Histogram
	for _, c := range ss.consumers {
		if res.MinEvents < 0 || c.events < res.MinEvents {
			res.MinEvents = c.events
		}
		res.MaxEvents = max(res.MaxEvents, c.events)
		res.GetMore += c.rounds
		lag.Merge(&c.lag)
	}
	res.Lag = lag.Summarize()
	if res.MinEvents < res.Writes-failed {
		return res, fmt.Errorf("a change stream received %d events of %d writes", res.MinEvents, res.Writes)
	}
	return res, nil
}
