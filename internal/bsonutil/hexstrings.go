package bsonutil

import (
	"encoding/hex"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// HexStrings is v with its strings, inside documents and arrays too,
// written as hex between before and after: a collation key is bytes,
// often not UTF-8, which a driver would refuse in a reply.
func HexStrings(v any, before, after string) any {
	switch x := v.(type) {
	case string:
		return before + hex.EncodeToString([]byte(x)) + after
	case bson.D:
		out := make(bson.D, len(x))
		for i, e := range x {
			out[i] = bson.E{Key: e.Key, Value: HexStrings(e.Value, before, after)}
		}
		return out
	case bson.A:
		out := make(bson.A, len(x))
		for i, e := range x {
			out[i] = HexStrings(e, before, after)
		}
		return out
	}
	return v
}
