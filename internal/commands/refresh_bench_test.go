package commands

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
)

// BenchmarkSessionRequest is one request of a session store with a
// 30-minute idle timeout: look the session up, and keep it alive.
// "touch-by-update" is what applications do today (a find, then an
// update of lastSeen on every request); "verify-read" is a find alone
// on a refreshOnRead index, which writes once per tenth of the timeout.
// 10 000 sessions, each requested about every 30 s of server time.
func BenchmarkSessionRequest(b *testing.B) {
	for _, mode := range []string{"touch-by-update", "verify-read"} {
		b.Run(mode, func(b *testing.B) {
			h, clk := sessionBenchHandler(b, mode == "verify-read")
			rng := rand.New(rand.NewPCG(1, 2))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				clk.Advance(3 * time.Millisecond)
				id := int32(rng.IntN(sessionBenchN))
				benchRun(b, h, bson.D{{Key: "find", Value: "s"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "limit", Value: 1}, {Key: "singleBatch", Value: true}})
				if mode == "touch-by-update" {
					benchRun(b, h, bson.D{{Key: "update", Value: "s"}, {Key: "updates", Value: bson.A{bson.D{
						{Key: "q", Value: bson.D{{Key: "_id", Value: id}}},
						{Key: "u", Value: bson.D{{Key: "$currentDate", Value: bson.D{{Key: "lastSeen", Value: true}}}}}}}}})
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(h.deps.Store.RefreshedOnRead())/float64(b.N), "refreshes/op")
		})
	}
}

const sessionBenchN = 10000

func sessionBenchHandler(b *testing.B, refresh bool) (*Handler, *clock.Manual) {
	clk := clock.NewManual(refreshT0)
	h, _ := newClockedHandler(b, clk)
	spec := bson.D{{Key: "key", Value: bson.D{{Key: "lastSeen", Value: 1}}}, {Key: "name", Value: "idle"}, {Key: "expireAfterSeconds", Value: 1800}}
	if refresh {
		spec = append(spec, bson.E{Key: "refreshOnRead", Value: true})
	}
	benchRun(b, h, bson.D{{Key: "createIndexes", Value: "s"}, {Key: "indexes", Value: bson.A{spec}}})
	docs := bson.A{}
	for i := 0; i < sessionBenchN; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "user", Value: "someone"}, {Key: "lastSeen", Value: bson.NewDateTimeFromTime(refreshT0)}})
	}
	benchRun(b, h, bson.D{{Key: "insert", Value: "s"}, {Key: "documents", Value: docs}})
	return h, clk
}

var refreshCtx = context.Background()

func benchRun(b *testing.B, h *Handler, body bson.D) {
	if _, err := call0(h, body); err != nil {
		b.Fatalf("%v: %v", body, err)
	}
}
