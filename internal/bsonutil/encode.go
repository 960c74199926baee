package bsonutil

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Marshal encodes doc as bson.Marshal does, byte for byte. The types that
// documents and replies are made of (those DecodeD produces, and the
// integers, strings and nested documents of replies) are appended
// directly; anything else, and every input bson.Marshal would reject,
// goes to bson.Marshal itself, except that an embedded bson.Raw is
// checked only for its frame (the server's own encoded results; the
// driver would also walk its elements). The driver's encoder looks each
// value's codec up in its registry through reflection, a visible share of
// reply encoding and document writes in the session workload's profile
// (docs/design/0005, "Hot path").
func Marshal(doc bson.D) ([]byte, error) {
	// Room for a typical small document, so it takes one allocation.
	if out, ok := AppendD(make([]byte, 0, 256), doc); ok {
		return out, nil
	}
	return bson.Marshal(doc)
}

// AppendD appends doc's BSON to dst. ok is false, with dst's contents past
// its original length undefined, when doc holds a value of a type it does
// not encode, a key with a NUL byte, or is nil; the caller then uses
// bson.Marshal.
func AppendD(dst []byte, doc bson.D) (out []byte, ok bool) {
	if doc == nil { // the driver refuses a nil document at the top level
		return dst, false
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for _, e := range doc {
		if dst, ok = appendElement(dst, e.Key, e.Value); !ok {
			return dst, false
		}
	}
	dst = append(dst, 0)
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst, true
}

func appendA(dst []byte, a []any) ([]byte, bool) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	var key [20]byte
	for i, v := range a {
		var ok bool
		if dst, ok = appendElement(dst, string(strconv.AppendInt(key[:0], int64(i), 10)), v); !ok {
			return dst, false
		}
	}
	dst = append(dst, 0)
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst, true
}

// appendRaws appends documents encoded already as the elements of an
// array: a change stream's batch, whose events are copied as they are.
func appendRaws(dst []byte, docs []bson.Raw) ([]byte, bool) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for i, d := range docs {
		if !framed(d) {
			return dst, false
		}
		dst = append(dst, byte(bson.TypeEmbeddedDocument))
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, 0)
		dst = append(dst, d...)
	}
	dst = append(dst, 0)
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst, true
}

// appendElement appends one element, or reports that v is not one of the
// types appended here.
func appendElement(dst []byte, key string, v any) ([]byte, bool) {
	if strings.IndexByte(key, 0) >= 0 {
		return dst, false
	}
	at := len(dst)
	dst = append(dst, 0)
	dst = append(dst, key...)
	dst = append(dst, 0)
	t, dst, ok := appendValue(dst, v)
	dst[at] = byte(t)
	return dst, ok
}

// appendValue appends v's value bytes and returns its type.
func appendValue(dst []byte, v any) (bson.Type, []byte, bool) {
	switch x := v.(type) {
	case string:
		return bson.TypeString, appendString(dst, x), true
	case int32:
		return bson.TypeInt32, binary.LittleEndian.AppendUint32(dst, uint32(x)), true
	case int64:
		return bson.TypeInt64, binary.LittleEndian.AppendUint64(dst, uint64(x)), true
	case float64:
		return bson.TypeDouble, binary.LittleEndian.AppendUint64(dst, math.Float64bits(x)), true
	case bool:
		return bson.TypeBoolean, append(dst, boolByte(x)), true
	case nil:
		return bson.TypeNull, dst, true
	case bson.D:
		if x == nil { // the driver's nil slice is a null, not {}
			return bson.TypeNull, dst, true
		}
		out, ok := AppendD(dst, x)
		return bson.TypeEmbeddedDocument, out, ok
	case bson.A:
		if x == nil {
			return bson.TypeNull, dst, true
		}
		out, ok := appendA(dst, x)
		return bson.TypeArray, out, ok
	case bson.DateTime:
		return bson.TypeDateTime, binary.LittleEndian.AppendUint64(dst, uint64(x)), true
	case bson.ObjectID:
		return bson.TypeObjectID, append(dst, x[:]...), true
	case []bson.Raw:
		if x == nil { // as the driver encodes a nil slice
			return bson.TypeNull, dst, true
		}
		out, ok := appendRaws(dst, x)
		return bson.TypeArray, out, ok
	case bson.Raw:
		// Result documents, encoded once already: copied as they are.
		// The driver walks them element by element to the same bytes; a
		// frame that is not a document is left to it (and its error).
		if !framed(x) {
			return 0, dst, false
		}
		return bson.TypeEmbeddedDocument, append(dst, x...), true
	}
	return appendRare(dst, v)
}

// appendRare appends the value types that are rarer in documents.
func appendRare(dst []byte, v any) (bson.Type, []byte, bool) {
	switch x := v.(type) {
	case bson.Binary:
		if x.Subtype == bson.TypeBinaryBinaryOld {
			return 0, dst, false // carries a second length; left to the driver
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(x.Data)))
		dst = append(dst, x.Subtype)
		return bson.TypeBinary, append(dst, x.Data...), true
	case bson.Timestamp:
		dst = binary.LittleEndian.AppendUint32(dst, x.I)
		return bson.TypeTimestamp, binary.LittleEndian.AppendUint32(dst, x.T), true
	case bson.Decimal128:
		h, l := x.GetBytes()
		dst = binary.LittleEndian.AppendUint64(dst, l)
		return bson.TypeDecimal128, binary.LittleEndian.AppendUint64(dst, h), true
	case bson.Undefined:
		return bson.TypeUndefined, dst, true
	case bson.MinKey:
		return bson.TypeMinKey, dst, true
	case bson.MaxKey:
		return bson.TypeMaxKey, dst, true
	}
	return 0, dst, false
}

// framed reports whether raw's length prefix is its length and it ends in
// the document terminator.
func framed(raw []byte) bool {
	return len(raw) >= 5 && int(binary.LittleEndian.Uint32(raw)) == len(raw) && raw[len(raw)-1] == 0
}

func appendString(dst []byte, s string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)+1))
	dst = append(dst, s...)
	return append(dst, 0)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}
