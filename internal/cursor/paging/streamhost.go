package paging

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/docstore"
)

// StreamHost is the server's part in the change streams: a stream is a
// cursor too, whose events a batch carries under the same reply limits,
// and whose updateLookup reads the store.
type StreamHost struct{ Store *docstore.Store }

var _ changestream.Host = StreamHost{}

// Current reads the document an update changed as it is now (nil when it
// is gone or expired), as updateLookup does on mongod.
func (s StreamHost) Current(db, coll string, id any) (bson.D, error) {
	c := s.Store.Collection(db, coll)
	if c == nil {
		return nil, nil
	}
	return c.FindOne(bson.D{{Key: "_id", Value: id}})
}

// EncodeEvent encodes an event as EncodeResult does a document.
func (StreamHost) EncodeEvent(d bson.D) ([]byte, error) { return EncodeResult(d) }

// MaxEventBytes is MaxResultBytes.
func (StreamHost) MaxEventBytes() int { return MaxResultBytes }
