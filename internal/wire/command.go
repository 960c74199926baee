package wire

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Command returns the request as one document: the body decoded to bson.D
// with each kind-1 sequence appended as `identifier: bson.A{bson.D...}`.
// The result shares no memory with the Reader's buffers. A sequence whose
// identifier is already a body field is an error (code 40433), as is
// undecodable BSON.
func (m *Message) Command() (bson.D, error) {
	body, err := decodeDoc(m.Body, len(m.Sequences))
	if err != nil {
		return nil, err
	}
	for _, s := range m.Sequences {
		for _, e := range body {
			if e.Key == s.Identifier {
				return nil, mongoerr.Newf(mongoerr.Location40433, "Duplicate field between body and document sequence %s", s.Identifier)
			}
		}
		docs := make(bson.A, 0, len(s.Docs))
		for _, raw := range s.Docs {
			d, err := decodeDoc(raw, 0)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d)
		}
		body = append(body, bson.E{Key: s.Identifier, Value: docs})
	}
	return body, nil
}

// decodeDoc converts raw to a bson.D with room for extra more fields.
func decodeDoc(raw bson.Raw, extra int) (bson.D, error) {
	d, err := bsonutil.DecodeD(raw, extra)
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.InvalidBSON, "invalid BSON in command: %v", err)
	}
	return d, nil
}
