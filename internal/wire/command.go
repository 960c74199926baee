package wire

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// sharedTextMax is the largest request (its documents' bytes) decoded
// with one shared text and slabs (bsonutil.SharedDecoder): a value that a
// handler keeps then keeps the request's text alive, so the text is small.
const sharedTextMax = bsonutil.SharedMax

// Command returns the request as one document: the body decoded to bson.D
// with each kind-1 sequence appended as `identifier: bson.A{bson.D...}`.
// The result shares no memory with the Reader's buffers. A sequence whose
// identifier is already a body field is an error (code 40433), as is
// undecodable BSON.
func (m *Message) Command() (bson.D, error) {
	var dec commandDecoder
	if n := m.docBytes(); n <= sharedTextMax {
		dec.share(m, n)
	}
	body, err := dec.decode(m.Body, len(m.Sequences))
	if err != nil {
		return nil, err
	}
	for _, s := range m.Sequences {
		for _, e := range body {
			if e.Key == s.Identifier {
				return nil, mongoerr.Newf(mongoerr.Location40433, "Duplicate field between body and document sequence %s", s.Identifier)
			}
		}
		docs, err := dec.decodeSequence(s.Docs)
		if err != nil {
			return nil, err
		}
		body = append(body, bson.E{Key: s.Identifier, Value: docs})
	}
	return body, nil
}

// docBytes is the size of the message's documents.
func (m *Message) docBytes() int {
	n := len(m.Body)
	for _, s := range m.Sequences {
		for _, d := range s.Docs {
			n += len(d)
		}
	}
	return n
}

// commandDecoder decodes a message's documents in order: the body, then
// each sequence's documents.
type commandDecoder struct {
	shared bool
	sd     bsonutil.SharedDecoder
	at     int // where the next document starts in the shared text
}

// share makes the decoder cut every string from one copy of the message's
// n bytes of documents, in the order decode will take them.
func (dec *commandDecoder) share(m *Message, n int) {
	text := append(make([]byte, 0, n), m.Body...)
	for _, s := range m.Sequences {
		for _, d := range s.Docs {
			text = append(text, d...)
		}
	}
	dec.sd.Reset(text)
	dec.sd.Count(m.Body, len(m.Sequences))
	for _, s := range m.Sequences {
		dec.sd.CountArray(s.Docs)
	}
	dec.shared = true
}

// decodeSequence converts a sequence's documents to a bson.A of bson.D.
func (dec *commandDecoder) decodeSequence(docs []bson.Raw) (any, error) {
	if dec.shared {
		a, err := dec.sd.DecodeArray(docs, dec.at)
		if err != nil {
			return nil, mongoerr.Newf(mongoerr.InvalidBSON, "invalid BSON in command: %v", err)
		}
		for _, raw := range docs {
			dec.at += len(raw)
		}
		return a, nil
	}
	a := make(bson.A, 0, len(docs))
	for _, raw := range docs {
		d, err := dec.decode(raw, 0)
		if err != nil {
			return nil, err
		}
		a = append(a, d)
	}
	return a, nil
}

// decode converts raw to a bson.D with room for extra more fields.
func (dec *commandDecoder) decode(raw bson.Raw, extra int) (bson.D, error) {
	var d bson.D
	var err error
	if dec.shared {
		d, err = dec.sd.Decode(raw, dec.at, extra)
		dec.at += len(raw)
	} else {
		d, err = bsonutil.DecodeD(raw, extra)
	}
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.InvalidBSON, "invalid BSON in command: %v", err)
	}
	return d, nil
}
