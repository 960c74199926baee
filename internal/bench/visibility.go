package bench

import (
	"context"
	"errors"
	"fmt"
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
}

// watchVisibility reads the storm collection back to back from `from`
// until `until` or until stop is closed.
func watchVisibility(ctx context.Context, coll *mongo.Collection, s schedule, from, until time.Time, stop <-chan struct{}) (Visibility, error) {
	var v Visibility
	if err := sleepUntil(ctx, from); err != nil {
		return v, err
	}
	for time.Now().Before(until) {
		select {
		case <-stop:
			return v, nil
		default:
		}
		if err := v.check(ctx, coll, s, time.Now()); err != nil {
			return v, err
		}
	}
	return v, nil
}

// check does one round of reads as of now (a time taken before sending,
// so the server's clock is at or past it when it answers).
func (v *Visibility) check(ctx context.Context, coll *mongo.Collection, s schedule, now time.Time) error {
	if k := s.expiredBy(now); k > 0 {
		for _, filter := range []bson.D{
			{{Key: "_id", Value: int64(k - 1)}},
			{{Key: "at", Value: bson.D{{Key: "$lte", Value: s.at(k - 1)}}}},
		} {
			found, err := exists(ctx, coll, filter)
			if err != nil {
				return err
			}
			v.ExpiredReads++
			if found {
				v.Violations++
			}
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
