package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Storm stream settings (StormSpec.Stream).
const (
	stormStreamOff = "off" // a stream on the storm collection, no pre-images
	stormStreamPre = "pre" // the same with pre-images recorded and returned
)

// ExpiryEvents is what a change stream open on the storm collection
// received: one delete event per expired document.
type ExpiryEvents struct {
	PreImages bool `json:"pre_images"`
	// Events is how many expiries the stream received by the storm's
	// drain deadline, of Expected.
	Events   int64 `json:"events"`
	Expected int64 `json:"expected"`
	// WithPreImage counts the events carrying fullDocumentBeforeChange.
	WithPreImage int64 `json:"with_pre_image"`
	// Lateness is the event's wallTime minus its expired.expiredAt: how
	// late after its expiry the stream's event was written.
	Lateness Summary `json:"lateness"`
}

// expiryStream reads a change stream of the storm collection's expiries.
type expiryStream struct {
	db     *mongo.Database
	sess   *mongo.Session
	coll   string
	cursor int64
	res    ExpiryEvents
	late   Histogram
}

// openExpiryStream turns pre-images on when asked and opens a stream of
// the collection's TTL deletions, before the storm's first expiry.
func openExpiryStream(ctx context.Context, c *mongo.Client, coll, mode string) (*expiryStream, error) {
	db := c.Database(benchDB)
	pre := mode == stormStreamPre
	spec := bson.D{}
	if pre {
		err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: coll},
			{Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: true}}}}).Err()
		if err != nil {
			return nil, fmt.Errorf("turn on pre-images: %w", err)
		}
		spec = bson.D{{Key: "fullDocumentBeforeChange", Value: "whenAvailable"}}
	}
	sess, err := c.StartSession()
	if err != nil {
		return nil, fmt.Errorf("start the stream's session: %w", err)
	}
	var reply struct {
		Cursor struct {
			ID int64 `bson:"id"`
		} `bson:"cursor"`
	}
	cmd := bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$changeStream", Value: spec}},
		bson.D{{Key: "$match", Value: bson.D{{Key: "expired", Value: bson.D{{Key: "$exists", Value: true}}}}}},
	}}, {Key: "cursor", Value: bson.D{}}}
	if err := db.RunCommand(mongo.NewSessionContext(ctx, sess), cmd).Decode(&reply); err != nil {
		return nil, fmt.Errorf("open the storm's change stream: %w", err)
	}
	return &expiryStream{db: db, sess: sess, coll: coll, cursor: reply.Cursor.ID, res: ExpiryEvents{PreImages: pre}}, nil
}

// run reads until it has n events or the deadline passes.
func (s *expiryStream) run(ctx context.Context, n int64, deadline time.Time) (*ExpiryEvents, error) {
	cmd := bson.D{{Key: "getMore", Value: s.cursor}, {Key: "collection", Value: s.coll},
		{Key: "maxTimeMS", Value: streamAwait}}
	ctx = mongo.NewSessionContext(ctx, s.sess)
	s.res.Expected = n
	for s.res.Events < n && time.Now().Before(deadline) {
		raw, err := s.db.RunCommand(ctx, cmd).Raw()
		if err != nil {
			return nil, fmt.Errorf("storm stream getMore: %w", err)
		}
		if err := s.batch(raw); err != nil {
			return nil, err
		}
	}
	s.res.Lateness = s.late.Summarize()
	return &s.res, nil
}

// batch records one reply's events.
func (s *expiryStream) batch(reply bson.Raw) error {
	arr, ok := reply.Lookup("cursor", "nextBatch").ArrayOK()
	if !ok {
		return errors.New("storm stream: getMore reply without cursor.nextBatch")
	}
	vals, err := arr.Values()
	if err != nil {
		return fmt.Errorf("storm stream: %w", err)
	}
	for _, v := range vals {
		ev := v.Document()
		wall, ok1 := ev.Lookup("wallTime").DateTimeOK()
		at, ok2 := ev.Lookup("expired", "expiredAt").DateTimeOK()
		if !ok1 || !ok2 {
			return fmt.Errorf("storm stream: expiry event without wallTime or expired.expiredAt: %v", ev)
		}
		s.res.Events++
		s.late.Add(max(time.Duration(wall-at)*time.Millisecond, 0))
		if _, ok := ev.Lookup("fullDocumentBeforeChange").DocumentOK(); ok {
			s.res.WithPreImage++
		}
	}
	return nil
}

// startExpiryStream opens the storm's stream when sp asks for one and
// reads it in the background until every document's expiry arrived or
// the deadline passed; wait returns what it received. A stream that
// falls behind is a figure of the run (Events < Expected), not a failure.
func startExpiryStream(ctx context.Context, c *mongo.Client, sp StormSpec, n int64, deadline time.Time) (wait func() (*ExpiryEvents, error), err error) {
	if sp.Stream == "" {
		return func() (*ExpiryEvents, error) { return nil, nil }, nil
	}
	s, err := openExpiryStream(ctx, c, sp.coll(), sp.Stream)
	if err != nil {
		return nil, err
	}
	type result struct {
		ev  *ExpiryEvents
		err error
	}
	done := make(chan result, 1)
	go func() {
		ev, err := s.run(ctx, n, deadline)
		done <- result{ev, err}
	}()
	return func() (*ExpiryEvents, error) {
		r := <-done
		return r.ev, r.err
	}, nil
}
