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
	// field up to that document's date. Violations are those that found
	// something.
	ExpiredReads int64 `json:"expired_reads"`
	Violations   int64 `json:"violations"`
	// LiveReads look up a document that expires at least liveMargin later;
	// LiveMissing count those not found (that would be early deletion).
	LiveReads   int64 `json:"live_reads"`
	LiveMissing int64 `json:"live_missing"`
	// RangeReads are the range reads among ExpiredReads, and
	// RangeReadMaxMs the slowest: each walks the expired backlog.
	RangeReads     int64   `json:"range_reads"`
	RangeReadMaxMs float64 `json:"range_read_max_ms"`
}

// idReadPause spaces the rounds of the _id reader: a few hundred checks a
// second are plenty, and back to back they would take a sizeable share of
// the server during the storm.
const idReadPause = 2 * time.Millisecond

// watchVisibility checks from `from` until `until` or until stop is
// closed that expired storm documents stay invisible. One reader looks up,
// every idReadPause, the most recently expired document by _id and a
// document that must still be live. A range read asks for any document
// dated at or before the most recently expired one, once at rangeAt (the
// end of the storm) and once more when stop closes (all deleted, or the
// drain timed out). Range reads are few because each one walks the
// entries of every expired document not yet deleted: back to back they
// would be the load.
func watchVisibility(ctx context.Context, coll *mongo.Collection, s schedule, from, rangeAt, until time.Time, stop <-chan struct{}) (Visibility, error) {
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
		if err2 = sleepUntil(ctx, rangeAt); err2 != nil {
			return
		}
		if err2 = rng.checkRange(ctx, coll, s, time.Now()); err2 != nil {
			return
		}
		select {
		case <-stop:
		case <-ctx.Done():
			err2 = ctx.Err()
			return
		}
		err2 = rng.checkRange(ctx, coll, s, time.Now())
	})
	wg.Wait()
	byID.ExpiredReads += rng.ExpiredReads
	byID.Violations += rng.Violations
	byID.RangeReads, byID.RangeReadMaxMs = rng.RangeReads, rng.RangeReadMaxMs
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
		found, err := exists(ctx, coll, bson.D{{Key: "_id", Value: s.id(k - 1)}})
		if err != nil {
			return err
		}
		v.ExpiredReads++
		if found {
			v.Violations++
		}
	}
	if j := s.expiredBy(now.Add(liveMargin)); j < s.n {
		found, err := exists(ctx, coll, bson.D{{Key: "_id", Value: s.id(j)}})
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

// checkRange asks for any document dated at or before the most recently
// expired one: all of them have expired, so none may come back.
func (v *Visibility) checkRange(ctx context.Context, coll *mongo.Collection, s schedule, now time.Time) error {
	k := s.expiredBy(now)
	if k == 0 {
		return nil
	}
	t0 := time.Now()
	found, err := exists(ctx, coll, bson.D{{Key: "at", Value: bson.D{{Key: "$lte", Value: s.at(k - 1)}}}})
	if err != nil {
		return err
	}
	v.RangeReads++
	v.RangeReadMaxMs = max(v.RangeReadMaxMs, ms(time.Since(t0)))
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
