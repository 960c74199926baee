package bsonutil

import (
	"bytes"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// DecodeD converts a BSON document to a bson.D with room for extra more
// fields. It yields exactly what bson.Unmarshal into a bson.D yields (nested
// documents as bson.D, arrays as bson.A), several times faster; the rare
// types it does not handle itself take the bson.Unmarshal path. The result
// shares no memory with raw.
func DecodeD(raw []byte, extra int) (bson.D, error) {
	d, err := toD(bsoncore.Document(raw), extra)
	if errors.Is(err, errSlowPath) {
		d = make(bson.D, 0, extra+8)
		err = bson.Unmarshal(raw, &d)
	}
	return d, err
}

var errSlowPath = errors.New("value needs the reflective decoder")

func toD(doc bsoncore.Document, extra int) (bson.D, error) {
	elems, err := elements(doc)
	if err != nil {
		return nil, err
	}
	d := make(bson.D, 0, countElements(elems)+extra)
	for len(elems) > 0 {
		el, rest, ok := bsoncore.ReadElement(elems)
		if !ok {
			return nil, errors.New("truncated element")
		}
		elems = rest
		v, err := toValue(el.Value())
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: elementKey(el), Value: v})
	}
	return d, nil
}

// elementKey is el's key. The field names of the requests drivers send
// most are returned as constants, without allocating a string for each;
// a name not listed is copied as el.Key() copies it.
func elementKey(el bsoncore.Element) string {
	k := el.KeyBytes()
	switch string(k) { // compared without conversion
	case "_id":
		return "_id"
	case "$db":
		return "$db"
	case "lsid":
		return "lsid"
	case "id":
		return "id"
	case "q":
		return "q"
	case "u":
		return "u"
	case "$set":
		return "$set"
	case "filter":
		return "filter"
	case "limit":
		return "limit"
	case "singleBatch":
		return "singleBatch"
	case "ordered":
		return "ordered"
	case "txnNumber":
		return "txnNumber"
	case "$clusterTime":
		return "$clusterTime"
	case "clusterTime":
		return "clusterTime"
	case "signature":
		return "signature"
	case "hash":
		return "hash"
	case "keyId":
		return "keyId"
	case "find":
		return "find"
	case "update":
		return "update"
	case "insert":
		return "insert"
	case "delete":
		return "delete"
	case "multi":
		return "multi"
	case "upsert":
		return "upsert"
	case "readConcern":
		return "readConcern"
	case "writeConcern":
		return "writeConcern"
	case "$readPreference":
		return "$readPreference"
	}
	return string(k)
}

func toA(arr bsoncore.Document) (bson.A, error) {
	elems, err := elements(arr)
	if err != nil {
		return nil, err
	}
	a := make(bson.A, 0, countElements(elems))
	for len(elems) > 0 {
		el, rest, ok := bsoncore.ReadElement(elems)
		if !ok {
			return nil, errors.New("truncated element")
		}
		elems = rest
		v, err := toValue(el.Value())
		if err != nil {
			return nil, err
		}
		a = append(a, v)
	}
	return a, nil
}

// elements returns the element bytes of doc, between the length prefix and
// the terminating NUL.
func elements(doc bsoncore.Document) ([]byte, error) {
	if len(doc) < 5 || doc[len(doc)-1] != 0 {
		return nil, fmt.Errorf("malformed document of %d bytes", len(doc))
	}
	return doc[4 : len(doc)-1], nil
}

// countElements sizes the result slice; it stops early on malformed input,
// which the decoding loop then reports.
func countElements(elems []byte) int {
	n := 0
	for len(elems) > 0 {
		_, rest, ok := bsoncore.ReadElement(elems)
		if !ok {
			break
		}
		elems = rest
		n++
	}
	return n
}

func toValue(v bsoncore.Value) (any, error) {
	var (
		out any
		ok  bool
	)
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		doc, ok := v.DocumentOK()
		if !ok {
			return nil, errors.New("malformed embedded document")
		}
		return toD(doc, 0)
	case bsoncore.TypeArray:
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, errors.New("malformed array")
		}
		return toA(bsoncore.Document(arr))
	case bsoncore.TypeDouble:
		out, ok = v.DoubleOK()
	case bsoncore.TypeString:
		out, ok = v.StringValueOK()
	case bsoncore.TypeInt32:
		out, ok = v.Int32OK()
	case bsoncore.TypeInt64:
		out, ok = v.Int64OK()
	case bsoncore.TypeBoolean:
		out, ok = v.BooleanOK()
	case bsoncore.TypeNull:
		return nil, nil
	default:
		return toRareValue(v)
	}
	if !ok {
		return nil, fmt.Errorf("malformed %s value", v.Type)
	}
	return out, nil
}

// toRareValue handles the types that are less common in commands.
func toRareValue(v bsoncore.Value) (any, error) {
	switch v.Type {
	case bsoncore.TypeObjectID:
		if oid, ok := v.ObjectIDOK(); ok {
			return bson.ObjectID(oid), nil
		}
	case bsoncore.TypeDateTime:
		if dt, ok := v.DateTimeOK(); ok {
			return bson.DateTime(dt), nil
		}
	case bsoncore.TypeBinary:
		// Subtype 2 (old binary) has an inner length the two decoders
		// treat differently; leave it to the reference one.
		if st, data, ok := v.BinaryOK(); ok && st != 0x02 {
			return bson.Binary{Subtype: st, Data: bytes.Clone(data)}, nil
		}
		return nil, errSlowPath
	case bsoncore.TypeTimestamp:
		if t, i, ok := v.TimestampOK(); ok {
			return bson.Timestamp{T: t, I: i}, nil
		}
	case bsoncore.TypeDecimal128:
		if h, l, ok := v.Decimal128OK(); ok {
			return bson.NewDecimal128(h, l), nil
		}
	case bsoncore.TypeRegex:
		if p, o, ok := v.RegexOK(); ok {
			return bson.Regex{Pattern: p, Options: o}, nil
		}
	case bsoncore.TypeUndefined:
		return bson.Undefined{}, nil
	case bsoncore.TypeMinKey:
		return bson.MinKey{}, nil
	case bsoncore.TypeMaxKey:
		return bson.MaxKey{}, nil
	}
	return nil, errSlowPath
}

// LookupScalar reads the top-level field name of a raw document without
// decoding the rest. ok is false when the value is an array, an embedded
// document or a type that needs the reflective decoder: then the caller
// decodes the document. A missing field is found false with ok true. The
// value is the one DecodeD would give.
func LookupScalar(raw []byte, name string) (v any, found, ok bool, err error) {
	elems, err := elements(bsoncore.Document(raw))
	if err != nil {
		return nil, false, false, err
	}
	for len(elems) > 0 {
		el, rest, valid := bsoncore.ReadElement(elems)
		if !valid {
			return nil, false, false, errors.New("truncated element")
		}
		elems = rest
		if el.Key() != name {
			continue
		}
		val := el.Value()
		if val.Type == bsoncore.TypeArray || val.Type == bsoncore.TypeEmbeddedDocument {
			return nil, true, false, nil
		}
		v, err := toValue(val)
		if errors.Is(err, errSlowPath) {
			return nil, true, false, nil
		}
		return v, true, err == nil, err
	}
	return nil, false, true, nil
}
