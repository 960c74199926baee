package catalog

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func TestExpiryOptions(t *testing.T) {
	ttl := bson.E{Key: "expireAfterSeconds", Value: int32(60)}
	spec := func(key string, opts ...bson.E) bson.D {
		return append(bson.D{{Key: "key", Value: bson.D{{Key: key, Value: int32(1)}}}, {Key: "name", Value: "x"}}, opts...)
	}
	cases := []struct {
		name string
		spec bson.D
		code mongoerr.Code // 0: accepted
		want func(*Index) bool
	}{
		{"refreshOnRead", spec("at", ttl, bson.E{Key: "refreshOnRead", Value: true}), 0, func(ix *Index) bool { return ix.RefreshOnRead }},
		{"refreshOnRead false is dropped from the spec", spec("at", bson.E{Key: "refreshOnRead", Value: false}), 0, func(ix *Index) bool { _, ok := bsonutil.Field(ix.Spec, "refreshOnRead"); return !ok }},
		{"refreshOnRead needs a TTL", spec("at", bson.E{Key: "refreshOnRead", Value: true}), mongoerr.CannotCreateIndex, nil},
		{"refreshOnRead is a bool", spec("at", ttl, bson.E{Key: "refreshOnRead", Value: int32(1)}), mongoerr.TypeMismatch, nil},
		{"lruLimit both", spec("at", bson.E{Key: "lruLimit", Value: bson.D{{Key: "documents", Value: int32(10)}, {Key: "bytes", Value: int64(4096)}}}), 0, func(ix *Index) bool { return ix.LRUDocs == 10 && ix.LRUBytes == 4096 }},
		{"lruLimit zero", spec("at", bson.E{Key: "lruLimit", Value: bson.D{{Key: "documents", Value: int32(0)}}}), mongoerr.CannotCreateIndex, nil},
		{"lruLimit on _id", spec("_id", bson.E{Key: "lruLimit", Value: bson.D{{Key: "documents", Value: int32(1)}}}), mongoerr.InvalidIndexSpecificationOption, nil},
		{"expireElements", spec("items.at", ttl, bson.E{Key: "expireElements", Value: true}), 0, func(ix *Index) bool { return ix.ExpireElements && ix.TTL }},
		{"expireElements with lruLimit", spec("items.at", ttl, bson.E{Key: "expireElements", Value: true}, bson.E{Key: "lruLimit", Value: bson.D{{Key: "documents", Value: int32(1)}}}), mongoerr.CannotCreateIndex, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix, err := ParseIndexSpec(tc.spec)
			if tc.code != 0 {
				if e := mongoerr.As(err); err == nil || e.Code != tc.code {
					t.Fatalf("error %v, want code %d", err, tc.code)
				}
				return
			}
			if err != nil || !tc.want(ix) {
				t.Fatalf("ParseIndexSpec = %+v, %v", ix, err)
			}
		})
	}
	a, _ := ParseIndexSpec(spec("at", ttl))
	b, _ := ParseIndexSpec(spec("at", ttl, bson.E{Key: "refreshOnRead", Value: true}))
	if Compare(a, b) != Equivalent {
		t.Fatal("refreshOnRead should make indexes equivalent, not identical or different")
	}
}
