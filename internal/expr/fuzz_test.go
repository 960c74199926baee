package expr

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/fuzzlimit"
)

// evalTimeLimit is the maxTimeMS each fuzzed evaluation runs under; well
// below fuzzlimit's CPU-time limit, so that an evaluation the Guard can
// stop is stopped before it counts as slow.
const evalTimeLimit = 200 * time.Millisecond

// FuzzCompile feeds arbitrary extended JSON to Compile and evaluates what
// compiles: neither may panic, whatever the input.
func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		`{"e": {"$add": [1, "$a"]}}`,
		`{"e": {"$map": {"input": "$arr", "in": {"$multiply": ["$$this", 2]}}}}`,
		`{"e": {"$dateToString": {"date": "$d", "format": "%Y"}}}`,
		`{"e": {"$switch": {"branches": [{"case": true, "then": 1}]}}}`,
		`{"e": "$$ROOT.a.b"}`,
	} {
		f.Add([]byte(seed))
	}
	doc := bson.D{
		{Key: "a", Value: int32(1)},
		{Key: "arr", Value: bson.A{int32(1), "x", bson.D{{Key: "b", Value: 2.5}}}},
		{Key: "d", Value: bson.DateTime(0)},
		{Key: "s", Value: "héllo"},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzlimit.Run(t, func() {
			var d bson.D
			if bson.UnmarshalExtJSON(data, false, &d) != nil || len(d) == 0 {
				return
			}
			e, err := Compile(d[0].Value)
			if err != nil {
				return
			}
			// As under maxTimeMS: a loop whose cost is its output's size
			// squared ($reduce concatenating) is stopped by the Guard, as
			// in mongod, rather than counted as a slow input.
			ctx, cancel := context.WithTimeout(context.Background(), evalTimeLimit)
			defer cancel()
			_, _ = e.Eval(doc, WithGuard(map[string]any{"v": int32(3)}, NewGuard(ctx)))
		}, data)
	})
}
