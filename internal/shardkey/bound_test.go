package shardkey

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestBound: a single hashed key's bound is its field and the hash; any
// other key's is the extracted key.
func TestBound(t *testing.T) {
	doc := bson.D{{Key: "_id", Value: int32(7)}, {Key: "a", Value: "x"}}
	hashed, err := Parse(bson.D{{Key: "_id", Value: "hashed"}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Hash(int32(7))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := hashed.Bound(doc); err != nil || len(got) != 1 || got[0].Key != "_id" || got[0].Value != h {
		t.Fatalf("hashed bound %v, %v; want {_id: %d}", got, err, h)
	}
	ranged, err := Parse(bson.D{{Key: "a", Value: int32(1)}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ranged.Bound(doc); err != nil || len(got) != 1 || got[0].Value != "x" {
		t.Fatalf("ranged bound %v, %v", got, err)
	}
}
