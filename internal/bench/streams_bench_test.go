package bench

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// updateEvent is an event as the session workload's touches make them.
func updateEvent(i int, wall time.Time) bson.D {
	return bson.D{
		{Key: "_id", Value: bson.D{{Key: "_data", Value: fmt.Sprintf("01%026x", i)}}},
		{Key: "operationType", Value: "update"},
		{Key: "clusterTime", Value: bson.Timestamp{T: uint32(wall.Unix()), I: uint32(i)}},
		{Key: "wallTime", Value: bson.NewDateTimeFromTime(wall)},
		{Key: "ns", Value: bson.D{{Key: "db", Value: benchDB}, {Key: "coll", Value: sessionsColl}}},
		{Key: "documentKey", Value: bson.D{{Key: "_id", Value: bson.NewObjectID()}}},
		{Key: "updateDescription", Value: bson.D{
			{Key: "updatedFields", Value: bson.D{{Key: "lastAccess", Value: bson.NewDateTimeFromTime(wall)}}},
			{Key: "removedFields", Value: bson.A{}}, {Key: "truncatedArrays", Value: bson.A{}}}},
	}
}

// BenchmarkStreamConsumerBatch is the consumer's work on one getMore
// reply of 130 touch events, about what a busy stream's replies carry.
func BenchmarkStreamConsumerBatch(b *testing.B) {
	now := time.UnixMilli(1_700_000_000_000)
	events := make([]bson.D, 130)
	for i := range events {
		events[i] = updateEvent(i, now)
	}
	raw, err := bson.Marshal(bson.D{{Key: "cursor", Value: bson.D{{Key: "id", Value: int64(7)},
		{Key: "nextBatch", Value: events}}}, {Key: "ok", Value: 1.0}})
	if err != nil {
		b.Fatal(err)
	}
	c := &streamConsumer{marker: "end"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.batch(raw, now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
}
