package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// maxResultBytes is the largest document a reply may carry: mongod's
// internal limit, 16 MiB plus 16 KiB.
const maxResultBytes = 16<<20 + 16<<10

// encodeResult encodes a result document, refusing one larger than a
// reply may carry with mongod's BSONObjectTooLarge; a document estimated
// far over the limit is refused before it is encoded at all.
func encodeResult(d bson.D) ([]byte, error) {
	if n := approxSize(d); n > 2*maxResultBytes {
		return nil, tooLarge(n, d)
	}
	raw, err := bsonutil.Marshal(d)
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.InternalError, "encode result: %v", err)
	}
	if len(raw) > maxResultBytes {
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
