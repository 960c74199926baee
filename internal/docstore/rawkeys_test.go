package docstore

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Keys and expiry read from raw BSON must be exactly what the decoded
// document gives, or deleting by them would leave index entries behind.
func TestRawKeysAgreeWithEntryKeys(t *testing.T) {
	s, clk := openStore(t)
	c, err := s.CreateCollection("db", "raw", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	specs := []bson.D{
		{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 10}},
		{{Key: "key", Value: bson.D{{Key: "v", Value: -1}}}, {Key: "name", Value: "v_-1"}},
		{{Key: "key", Value: bson.D{{Key: "v", Value: 1}, {Key: "t", Value: -1}}}, {Key: "name", Value: "v_t"}},
		{{Key: "key", Value: bson.D{{Key: "w", Value: 1}}}, {Key: "name", Value: "w_sparse"}, {Key: "sparse", Value: true}},
		{{Key: "key", Value: bson.D{{Key: "e.k", Value: 1}}}, {Key: "name", Value: "dotted"}},
		{{Key: "key", Value: bson.D{{Key: "v", Value: 1}}}, {Key: "name", Value: "partial"}, {Key: "partialFilterExpression", Value: bson.D{{Key: "w", Value: bson.D{{Key: "$exists", Value: true}}}}}},
	}
	for _, spec := range specs {
		mustIndex(t, c, spec)
	}
	now := clk.Now()
	values := []any{nil, "s", int32(7), int64(7), 7.5, true, date(now.Add(-time.Hour)), date(now.Add(time.Hour)),
		bson.NewObjectID(), bson.A{int32(1), "x"}, bson.A{}, bson.D{{Key: "k", Value: 1}}, bson.Regex{Pattern: "a"}, bson.MinKey{}}
	checked := 0
	for i, v := range values {
		for j, w := range values {
			doc := bson.D{{Key: "_id", Value: i*100 + j}, {Key: "t", Value: v}, {Key: "v", Value: w}}
			if j%3 == 0 {
				doc = append(doc, bson.E{Key: "w", Value: v})
			}
			raw, err := bson.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			decoded := &stored{raw: raw}
			if err := decoded.decode(); err != nil {
				t.Fatal(err)
			}
			st := c.state.Load()
			for _, ix := range st.indexes[1:] {
				want, err := ix.entryKeys(decoded.doc)
				if err != nil {
					continue // e.g. parallel arrays: rejected on write anyway
				}
				got, ok, err := ix.rawKeys(raw)
				if err != nil {
					t.Fatalf("%s on %v: %v", ix.def.Name, doc, err)
				}
				if !ok {
					continue
				}
				checked++
				if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) || (len(got) == 1 && !bytes.Equal(got[0], want[0])) {
					t.Errorf("%s on %v: raw keys %x, decoded %x", ix.def.Name, doc, got, want)
				}
			}
			expired, ok, err := c.rawExpired(raw, now)
			if err != nil {
				t.Fatal(err)
			}
			if ok && expired != c.Expired(decoded.doc, now) {
				t.Errorf("%v: raw expired %v, decoded %v", doc, expired, !expired)
			}
		}
	}
	if checked < 200 {
		t.Fatalf("only %d cases took the raw path", checked)
	}
}
