package bsonutil

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// slabChunk is the most elements one slab holds: a kept value pins at
// most its slab, a few KiB. A document or array with more elements gets
// an allocation of its own.
const slabChunk = 64

// slab is the unused room of one kind's current slab, and how many more
// elements the decode's census counted that no slab holds yet.
type slab[T any] struct {
	free []T
	left int
}

// take returns n consecutive elements with no room past them, so an
// append to the result reallocates rather than overwriting a neighbour.
// A new slab holds what the census left, up to slabChunk; past the
// census each take is an allocation of its own.
func (s *slab[T]) take(n int) []T {
	if len(s.free) < n {
		k := max(n, min(s.left, slabChunk))
		s.free = make([]T, k)
		s.left = max(0, s.left-k)
	}
	out := s.free[:n:n]
	s.free = s.free[n:]
	return out
}

func (s *slab[T]) one() *T { return &s.take(1)[0] }

// census counts, before a shared decode, what each of its slabs will
// hold, so that each is made once and at its size: a slab guessed too
// big wastes the bytes that pace the collector, one too small costs an
// allocation per value past it. It never counts less than the decode
// takes: a value the decode boxes without a slab (a small integer, an
// empty string) is counted anyway.
type census struct {
	elems, vals        int // the elements of documents and of arrays
	heads, words, bins int // the boxed values (valueSlabs)
}

// document counts doc and what it holds. Malformed bytes end the count;
// the decode reports them.
func (c *census) document(doc []byte, array bool) {
	elems, err := elements(doc)
	if err != nil {
		return
	}
	for len(elems) > 0 {
		el, rest, ok := bsoncore.ReadElement(elems)
		if !ok {
			return
		}
		elems = rest
		if array {
			c.vals++
		} else {
			c.elems++
		}
		c.value(el.Value())
	}
}

func (c *census) value(v bsoncore.Value) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		c.heads++
		c.document(v.Data, v.Type == bsoncore.TypeArray)
	case bsoncore.TypeString:
		c.heads++
	case bsoncore.TypeDouble, bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDateTime, bsoncore.TypeTimestamp:
		c.words++
	case bsoncore.TypeObjectID:
		c.words += 2
	case bsoncore.TypeBinary:
		c.bins++
	}
}

// sequence counts docs decoded as one array of documents (DecodeArray).
func (c *census) sequence(docs []bson.Raw) {
	c.heads += 1 + len(docs)
	c.vals += len(docs)
	for _, raw := range docs {
		c.document(raw, false)
	}
}
