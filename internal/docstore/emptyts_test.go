package docstore

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestEmptyTimestampsFill: each top-level Timestamp(0, 0) but _id's gets
// the current second and an increment unique within it; a new second
// starts again at 1; a document without one is returned uncopied.
func TestEmptyTimestampsFill(t *testing.T) {
	var ts EmptyTimestamps
	t0 := time.Unix(1_700_000_000, 0)
	empty := bson.Timestamp{}
	doc := bson.D{{Key: "_id", Value: empty}, {Key: "a", Value: empty}, {Key: "b", Value: bson.D{{Key: "c", Value: empty}}}, {Key: "d", Value: empty}}
	out := ts.Fill(doc, t0)
	want := []bson.Timestamp{empty, {T: 1_700_000_000, I: 1}, {}, {T: 1_700_000_000, I: 2}}
	for i, w := range want {
		if got, ok := out[i].Value.(bson.Timestamp); ok && got != w {
			t.Fatalf("field %s: %v, want %v", out[i].Key, got, w)
		}
	}
	if doc[1].Value != empty {
		t.Fatalf("the caller's document changed: %v", doc)
	}
	if got := ts.Fill(bson.D{{Key: "a", Value: empty}}, t0.Add(time.Second))[0].Value; got != (bson.Timestamp{T: 1_700_000_001, I: 1}) {
		t.Fatalf("next second: %v", got)
	}
	plain := bson.D{{Key: "a", Value: int32(1)}}
	if out := ts.Fill(plain, t0); &out[0] != &plain[0] {
		t.Fatal("a document without an empty timestamp was copied")
	}
}
