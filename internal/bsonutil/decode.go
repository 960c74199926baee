package bsonutil

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// DecodeD converts a BSON document to a bson.D with room for extra more
// fields. It yields exactly what bson.Unmarshal into a bson.D yields (nested
// documents as bson.D, arrays as bson.A), several times faster; the rare
// types it does not handle itself take the bson.Unmarshal path. The result
// shares no memory with raw.
func DecodeD(raw []byte, extra int) (bson.D, error) {
	var dec decoder
	return dec.decodeD(raw, 0, extra)
}

// SharedMax is the largest document (or request, its documents' bytes
// together) decoded with one shared text and slabs: a value a caller keeps
// of it keeps the whole text alive, so the text is small. A session
// document or command is 150 to 250 bytes.
const SharedMax = 4 << 10

// DecodeShared is DecodeD for one document that is decoded to be changed
// and written again (a write's current version): up to SharedMax bytes, its
// strings are cut from one copy of raw and its documents' elements from one
// slab, a few allocations where DecodeD makes one per string and per
// document. Bigger documents are decoded as DecodeD does. Scans feeding a
// pipeline keep DecodeD: a $push of one string per document would keep
// each document's whole text.
func DecodeShared(raw []byte, extra int) (bson.D, error) {
	if len(raw) > SharedMax {
		return DecodeD(raw, extra)
	}
	var sd SharedDecoder
	sd.Reset(bytes.Clone(raw))
	sd.Count(raw, extra)
	return sd.Decode(raw, 0, extra)
}

var errSlowPath = errors.New("value needs the reflective decoder")

// SharedDecoder decodes the documents of one small request with a few
// allocations for all of them instead of several for each: strings are cut
// from one string holding every document's bytes, and the elements of
// documents and arrays from shared slabs. What it returns is what DecodeD
// returns and equally independent of the request's buffer, but anything
// kept of it keeps the whole text and a slab (at most slabChunk elements)
// alive: callers use it for small requests only.
type SharedDecoder struct{ d decoder }

// Reset starts a request whose documents' bytes, concatenated, are text.
// The decode's strings are cut from text and its binaries' bytes are
// parts of it, so nothing may write to text afterwards but a decoded
// binary's owner, to that binary's own bytes, which no string shares.
func (sd *SharedDecoder) Reset(text []byte) {
	sd.d = decoder{text: text, shared: true}
}

// Count sizes the slabs for decoding raw with room for extra more fields
// (Decode). Counting every document before decoding any lets each slab
// be made once, at its size.
func (sd *SharedDecoder) Count(raw []byte, extra int) {
	var c census
	c.elems = extra
	c.document(raw, false)
	sd.d.plan(c)
}

// CountArray is Count for DecodeArray's documents.
func (sd *SharedDecoder) CountArray(docs []bson.Raw) {
	var c census
	c.sequence(docs)
	sd.d.plan(c)
}

// Decode is DecodeD of raw, which is text[at:at+len(raw)].
func (sd *SharedDecoder) Decode(raw []byte, at, extra int) (bson.D, error) {
	if at < 0 || at+len(raw) > len(sd.d.text) {
		return nil, fmt.Errorf("document at %d of %d bytes is outside the %d-byte text", at, len(raw), len(sd.d.text))
	}
	return sd.d.decodeD(raw, at, extra)
}

// DecodeArray decodes docs, the documents of a kind-1 sequence that start
// at offset at of the text one after another, into the value an array of
// them decodes to: a bson.A of bson.D, boxed from the slabs.
func (sd *SharedDecoder) DecodeArray(docs []bson.Raw, at int) (any, error) {
	a := sd.d.newA(len(docs))
	for _, raw := range docs {
		d, err := sd.Decode(raw, at, 0)
		if err != nil {
			return nil, err
		}
		a = append(a, sd.d.slabs.boxD(d))
		at += len(raw)
	}
	return sd.d.slabs.boxA(a), nil
}

// decoder converts BSON to bson.D. Without shared text every string is
// copied and every document allocated on its own.
type decoder struct {
	text   []byte // the bytes being decoded, when shared
	shared bool
	elems  slab[bson.E] // the elements of documents, when shared
	vals   slab[any]    // the elements of arrays, when shared
	slabs  valueSlabs   // the boxed values, when shared
}

// plan adds what a census counted to what the slabs will hold.
func (dec *decoder) plan(c census) {
	dec.elems.left += c.elems
	dec.vals.left += c.vals
	dec.slabs.heads.left += c.heads
	dec.slabs.words.left += c.words
	dec.slabs.bins.left += c.bins
}

func (dec *decoder) decodeD(raw []byte, at, extra int) (bson.D, error) {
	d, err := dec.toD(bsoncore.Document(raw), at, extra)
	if errors.Is(err, errSlowPath) {
		return unmarshalD(raw, extra)
	}
	return d, err
}

// unmarshalD is the reflective decoder's path, apart so that its
// variable's escape (Unmarshal takes its address) costs only this path a
// heap allocation.
func unmarshalD(raw []byte, extra int) (bson.D, error) {
	d := make(bson.D, 0, extra+8)
	err := bson.Unmarshal(raw, &d)
	return d, err
}

// toD decodes doc, which starts at offset at of the shared text.
func (dec *decoder) toD(doc bsoncore.Document, at, extra int) (bson.D, error) {
	elems, err := elements(doc)
	if err != nil {
		return nil, err
	}
	d := dec.newD(countElements(elems) + extra)
	at += 4
	for len(elems) > 0 {
		el, rest, ok := bsoncore.ReadElement(elems)
		if !ok {
			return nil, errors.New("truncated element")
		}
		elems = rest
		key := el.KeyBytes()
		v, err := dec.toValue(el.Value(), at+len(key)+2)
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: dec.elementKey(key, at+1), Value: v})
		at += len(el)
	}
	return d, nil
}

// newD returns an empty bson.D with room for exactly n elements, from the
// slab when shared.
func (dec *decoder) newD(n int) bson.D {
	if !dec.shared || n == 0 {
		return make(bson.D, 0, n) // never nil, as bson.Unmarshal's
	}
	return dec.elems.take(n)[:0]
}

// newA is newD for arrays.
func (dec *decoder) newA(n int) bson.A {
	if !dec.shared || n == 0 {
		return make(bson.A, 0, n)
	}
	return dec.vals.take(n)[:0]
}

// str returns b, found at offset at of the text, as a string.
func (dec *decoder) str(b []byte, at int) string {
	if dec.shared {
		if len(b) == 0 {
			return ""
		}
		return unsafe.String(&dec.text[at], len(b))
	}
	return string(b)
}

// elementKey is el's key. The field names of the requests drivers send
// most are returned as constants, without allocating a string for each;
// a name not listed is copied as el.Key() copies it.
func (dec *decoder) elementKey(k []byte, at int) string {
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
	return dec.str(k, at)
}

func (dec *decoder) toA(arr bsoncore.Document, at int) (bson.A, error) {
	elems, err := elements(arr)
	if err != nil {
		return nil, err
	}
	a := dec.newA(countElements(elems))
	at += 4
	for len(elems) > 0 {
		el, rest, ok := bsoncore.ReadElement(elems)
		if !ok {
			return nil, errors.New("truncated element")
		}
		elems = rest
		v, err := dec.toValue(el.Value(), at+len(el.KeyBytes())+2)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		at += len(el)
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

// toValue decodes v, whose data starts at offset at of the shared text.
func (dec *decoder) toValue(v bsoncore.Value, at int) (any, error) {
	if dec.shared {
		return dec.toSharedValue(v, at)
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		doc, ok := v.DocumentOK()
		if !ok {
			return nil, errors.New("malformed embedded document")
		}
		return dec.toD(doc, at, 0)
	case bsoncore.TypeArray:
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, errors.New("malformed array")
		}
		return dec.toA(bsoncore.Document(arr), at)
	case bsoncore.TypeString:
		if b, ok := stringBytes(v.Data); ok {
			return string(b), nil
		}
		return nil, malformed(v)
	}
	return toScalar(v)
}

// toSharedValue is toValue for a shared decode: strings and binaries'
// bytes cut from the text, and every value boxed from the slabs.
func (dec *decoder) toSharedValue(v bsoncore.Value, at int) (any, error) {
	vs := &dec.slabs
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		doc, ok := v.DocumentOK()
		if !ok {
			return nil, errors.New("malformed embedded document")
		}
		d, err := dec.toD(doc, at, 0)
		if err != nil {
			return nil, err
		}
		return vs.boxD(d), nil
	case bsoncore.TypeArray:
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, errors.New("malformed array")
		}
		a, err := dec.toA(bsoncore.Document(arr), at)
		if err != nil {
			return nil, err
		}
		return vs.boxA(a), nil
	case bsoncore.TypeString:
		if b, ok := stringBytes(v.Data); ok {
			return vs.boxString(dec.str(b, at+4)), nil
		}
		return nil, malformed(v)
	case bsoncore.TypeBinary:
		st, data, ok := v.BinaryOK()
		if !ok || st == 0x02 { // see toRareValue
			return toRareValue(v)
		}
		at += 5 // past the length and the subtype
		return vs.boxBinary(bson.Binary{Subtype: st, Data: dec.text[at : at+len(data) : at+len(data)]}), nil
	}
	return vs.toScalar(v)
}

func malformed(v bsoncore.Value) error {
	return fmt.Errorf("malformed %s value", v.Type)
}

// toScalar decodes a value that is neither a document, an array nor a
// string, boxed by Go.
func toScalar(v bsoncore.Value) (any, error) {
	var (
		out any
		ok  bool
	)
	switch v.Type {
	case bsoncore.TypeDouble:
		out, ok = v.DoubleOK()
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
		return nil, malformed(v)
	}
	return out, nil
}

// toScalar is the package's toScalar with the common types boxed from
// the slabs; the rare ones are boxed by Go.
func (vs *valueSlabs) toScalar(v bsoncore.Value) (any, error) {
	var (
		out any
		ok  bool
	)
	switch v.Type {
	case bsoncore.TypeDouble:
		var f float64
		f, ok = v.DoubleOK()
		out = vs.boxDouble(f)
	case bsoncore.TypeInt32:
		var i int32
		i, ok = v.Int32OK()
		out = vs.boxInt32(i)
	case bsoncore.TypeInt64:
		var i int64
		i, ok = v.Int64OK()
		out = vs.boxInt64(i)
	case bsoncore.TypeDateTime:
		var dt int64
		dt, ok = v.DateTimeOK()
		out = vs.boxDateTime(bson.DateTime(dt))
	case bsoncore.TypeObjectID:
		var oid bson.ObjectID
		oid, ok = v.ObjectIDOK()
		out = vs.boxObjectID(oid)
	case bsoncore.TypeTimestamp:
		var t, i uint32
		t, i, ok = v.TimestampOK()
		out = vs.boxTimestamp(bson.Timestamp{T: t, I: i})
	default:
		return toScalar(v)
	}
	if !ok {
		return nil, malformed(v)
	}
	return out, nil
}

// stringBytes returns the bytes of a BSON string value (an int32 length
// counting the terminating NUL, the bytes, the NUL), checked as
// bsoncore's StringValueOK checks them.
func stringBytes(data []byte) ([]byte, bool) {
	if len(data) < 5 {
		return nil, false
	}
	n := int(int32(binary.LittleEndian.Uint32(data)))
	if n < 1 || n > len(data)-4 || data[4+n-1] != 0 {
		return nil, false
	}
	return data[4 : 4+n-1], true
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
		var dec decoder
		v, err := dec.toValue(val, 0)
		if errors.Is(err, errSlowPath) {
			return nil, true, false, nil
		}
		return v, true, err == nil, err
	}
	return nil, false, true, nil
}
