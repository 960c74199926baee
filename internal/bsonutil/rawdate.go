package bsonutil

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Top-level dates in raw documents, found without decoding: a touch
// (docstore's touchlog.go) is a write that changes only one.

// ChangedDate returns the name of the top-level date of doc whose 8
// value bytes hold [lo, hi), the bytes in which doc differs from another
// version of one length; false when they reach outside one.
func ChangedDate(doc []byte, lo, hi int) ([]byte, bool) {
	var name []byte
	eachElement(doc, func(el bsoncore.Element, end int) bool {
		if lo >= end {
			return true
		}
		if bson.Type(el[0]) == bson.TypeDateTime && lo >= end-8 && hi <= end && lo < hi {
			name = el.KeyBytes()
		}
		return false
	})
	return name, name != nil
}

// DateOffset returns where the value of doc's top-level date name
// starts: its 8 bytes, little-endian milliseconds.
func DateOffset(doc []byte, name string) (int, bool) {
	at, ok := 0, false
	eachElement(doc, func(el bsoncore.Element, end int) bool {
		if string(el.KeyBytes()) != name {
			return true
		}
		at, ok = end-8, bson.Type(el[0]) == bson.TypeDateTime
		return false
	})
	return at, ok
}

// eachElement calls fn with doc's top-level elements in order, each
// with the offset where it ends, until fn returns false.
func eachElement(doc []byte, fn func(el bsoncore.Element, end int) bool) {
	if len(doc) < 5 {
		return
	}
	at, rest := 4, doc[4:len(doc)-1]
	for len(rest) > 0 {
		el, next, ok := bsoncore.ReadElement(rest)
		if !ok {
			return
		}
		at += len(el)
		if !fn(el, at) {
			return
		}
		rest = next
	}
}
