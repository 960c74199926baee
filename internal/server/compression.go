package server

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// CompressionReply negotiates the compressors a hello's body asks for
// (its "compression" array) and returns the reply field that lists the
// ones kept, or nil when the hello asked for none or none is shared. The
// server and the router answer hello with it.
func (c *Conn) CompressionReply(hello bson.D) bson.D {
	v, ok := bsonutil.Field(hello, "compression")
	if !ok {
		return nil
	}
	var names []string
	for _, x := range bsonutil.ToA(v) {
		if s, ok := x.(string); ok {
			names = append(names, s)
		}
	}
	kept := c.NegotiateCompression(names)
	if len(kept) == 0 {
		return nil
	}
	arr := make(bson.A, len(kept))
	for i, s := range kept {
		arr[i] = s
	}
	return bson.D{{Key: "compression", Value: arr}}
}
