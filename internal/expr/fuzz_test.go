package expr

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/fuzzlimit"
)

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
			_, _ = e.Eval(doc, map[string]any{"v": int32(3)})
		}, data)
	})
}
