package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// liveMargin is how far from its expiry a document must be for the reader
// to require that it is still visible.
const liveMargin = time.Second

// Visibility is what a reader polling the storm collection saw.
type Visibility struct {
	// ExpiredReads are reads that must find nothing: the most recently
	// expired document by _id, and any document by a range on the TTL
	// field ending at that document's date. Violations are those that found
	// something.
	ExpiredReads int64 `json:"expired_reads"`
	Violations   int64 `json:"violations"`
	// LiveReads look up a document that expires at least liveMargin later;
	// LiveMissing count those not found (that would be early deletion).
	LiveReads   int64 `json:"live_reads"`
	LiveMissing int64 `json:"live_missing"`
}

// The range reader asks every rangeReadPause for any document dated in
// the rangeReadSpan up to the most recently expired one. The span is
// short because the server must step over every expired document not yet
// deleted in it: an unbounded range would make the probe, not the
// workload, the load during a storm.
const (
	rangeReadPause = 100 * time.Millisecond
	rangeReadSpan  = time.Millisecond
)

// idReadPause spaces the rounds of the _id reader: a few hundred checks a
// second are plenty, and back to back they would take a sizeable share of
// the server during the storm.
const idReadPause = 2 * time.Millisecond

// watchVisibility runs two readers from `from` until `until` or until
// stop is closed: one looks up, every idReadPause, the most recently
// expired document by _id and a document that must still be live; the
// other asks,
// every rangeReadPause, for any document in a range of expired dates.
func watchVisibility(ctx context.Context, coll *mongo.Collection, s schedule, from, until time.Time, stop <-chan struct{}) (Visibility, error) {
	if err := sleepUntil(ctx, from); err != nil {
		return Visibility{}, err
	}
	var (
		wg         sync.WaitGroup
		byID, rng  Visibility
		err1, err2 error
	)
	wg.Go(func() {
		err1 = readLoop(ctx, until, stop, idReadPause, func(now time.Time) error { return byID.checkByID(ctx, coll, s, now) })
	})
	wg.Go(func() {
		err2 = readLoop(ctx, until, stop, rangeReadPause, func(now time.Time) error { return rng.checkRange(ctx, coll, s, now) })
	})
	wg.Wait()
	byID.ExpiredReads += rng.ExpiredReads
	byID.Violations += rng.Violations
	return byID, errors.Join(err1, err2)
}

// readLoop calls read with the current time until `until` or stop,
// pausing between calls.
func readLoop(ctx context.Context, until time.Time, stop <-chan struct{}, pause time.Duration, read func(time.Time) error) error {
	for time.Now().Before(until) {
		select {
		case <-stop:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if err := read(time.Now()); err != nil {
			return err
		}
		if pause > 0 {
			if err := sleepUntil(ctx, time.Now().Add(pause)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkByID reads, as of now (taken before sending, so the server's clock
// is at or past it when it answers), the most recently expired document,
// which must be absent, and one that expires liveMargin or more later,
// which must be present.
func (v *Visibility) checkByID(ctx context.Context, coll *mongo.Collection, s schedule, now time.Time) error {
	if k := s.expiredBy(now); k > 0 {
		found, err := exists(ctx, coll, bson.D{{Key: "_id", Value: int64(k - 1)}})
		if err != nil {
			return err
		}
		v.ExpiredReads++
		if found {
			v.Violations++
		}
	}
	if j := s.expiredBy(now.Add(liveMargin)); j < s.n {
		found, err := exists(ctx, coll, bson.D{{Key: "_id", Value: int64(j)}})
		if err != nil {
			return err
		}
		v.LiveReads++
		if !found {
			v.LiveMissing++
		}
	}
	return nil
}

// checkRange asks for any document dated within rangeReadSpan up to the
// most recently expired one: all of them have expired, so none may come
// back.
func (v *Visibility) checkRange(ctx context.Context, coll *mongo.Collection, s schedule, now time.Time) error {
	k := s.expiredBy(now)
	if k == 0 {
		return nil
	}
	last := s.at(k - 1)
	found, err := exists(ctx, coll, bson.D{{Key: "at", Value: bson.D{
		{Key: "$gt", Value: last.Add(-rangeReadSpan)},
		{Key: "$lte", Value: last},
	}}})
	if err != nil {
		return err
	}
	v.ExpiredReads++
	if found {
		v.Violations++
	}
	return nil
}

func exists(ctx context.Context, coll *mongo.Collection, filter bson.D) (bool, error) {
	err := coll.FindOne(ctx, filter, options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("visibility read %v: %w", filter, err)
	}
	return true, nil
}
