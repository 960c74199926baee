package paging

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// MaxResultBytes is the largest document a reply may carry: mongod's
// internal limit, 16 MiB plus 16 KiB.
const MaxResultBytes = 16<<20 + 16<<10

// EncodeResult encodes a result document, refusing one larger than a
// reply may carry with mongod's BSONObjectTooLarge; a document estimated
// far over the limit is refused before it is encoded at all.
func EncodeResult(d bson.D) ([]byte, error) {
	if n := approxSize(d); n > 2*MaxResultBytes {
		return nil, tooLarge(n, d)
	}
	raw, err := bsonutil.Marshal(d)
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.InternalError, "encode result: %v", err)
	}
	if len(raw) > MaxResultBytes {
		return nil, tooLarge(len(raw), d)
	}
	return raw, nil
}

func tooLarge(n int, d bson.D) error {
	first := ""
	if len(d) > 0 {
		v := bsonutil.Format(d[0].Value)
		if len(v) > 100 {
			v = v[:100] + "..."
		}
		first = " First element: " + d[0].Key + ": " + v
	}
	return mongoerr.Newf(mongoerr.BSONObjectTooLarge, "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and 16793600(16MB)%s", n, n, first)
}

// approxSize estimates a document's BSON size without encoding it.
func approxSize(d bson.D) int {
	n := 5
	for _, e := range d {
		n += 2 + len(e.Key) + approxValueSize(e.Value)
	}
	return n
}

func approxValueSize(v any) int {
	switch x := v.(type) {
	case string:
		return 5 + len(x)
	case bson.D:
		return approxSize(x)
	case bson.A:
		n := 5
		for _, e := range x {
			n += 4 + approxValueSize(e)
		}
		return n
	case bson.Binary:
		return 5 + len(x.Data)
	}
	return 8
}
