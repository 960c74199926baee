package executor

import (
	"hash/fnv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/keyenc"
)

// WithRecordIDs appends $recordId to each document src yields, as find's
// showRecordId does.
func WithRecordIDs(src cursor.Source) cursor.Source { return &recordIDSource{src: src} }

type recordIDSource struct {
	src cursor.Source
}

func (s *recordIDSource) Next() (bson.D, bool, error) {
	d, ok, err := s.src.Next()
	if !ok || err != nil {
		return d, ok, err
	}
	id, _ := bsonutil.Field(d, "_id")
	return append(d, bson.E{Key: "$recordId", Value: RecordID(id)}), true, nil
}

func (s *recordIDSource) Close() error { return s.src.Close() }

// RecordID is the record id of the document with _id id. Mayfly stores
// documents by _id, so the record id is derived from it: the same for the
// document's whole life, different between documents (up to a 63-bit
// hash collision).
func RecordID(id any) int64 {
	h := fnv.New64a()
	_, _ = h.Write(keyenc.AppendValue(nil, id))
	return int64(h.Sum64() >> 1)
}
