// Package keyenc encodes BSON values into byte strings whose bytewise order is
// MongoDB's value order (bsonutil.Compare), so that index and TTL keys can be
// stored in an ordered key-value engine and range-scanned directly.
//
// Every encoding starts with a one-byte type tag that orders by canonical
// type rank and is self-delimiting, so encodings can be concatenated into
// compound keys that still order component by component. The format is
// specified in docs/design/0001-key-encoding.md.
package keyenc

import (
	"slices"
	"sort"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Type tags. Their order is MongoDB's cross-type order; numbers use six tags
// (one per class) so that NaN < -Inf < negatives < 0 < positives < +Inf is
// decided by the first byte. 0x00 is reserved for the end of a document or
// array, so it sorts below every element.
const (
	tagEnd       = 0x00
	tagMinKey    = 0x08
	tagUndefined = 0x0C
	tagNull      = 0x10
	tagNaN       = 0x18
	tagNegInf    = 0x19
	tagNeg       = 0x1A
	tagZero      = 0x1B
	tagPos       = 0x1C
	tagPosInf    = 0x1D
	tagString    = 0x20
	tagObject    = 0x28
	tagArray     = 0x30
	tagBinary    = 0x38
	tagObjectID  = 0x40
	tagFalse     = 0x48
	tagTrue      = 0x49
	tagDate      = 0x50
	tagTimestamp = 0x54
	tagRegex     = 0x58
	tagDBPointer = 0x60
	tagCode      = 0x68
	tagCodeScope = 0x70
	tagMaxKey    = 0xF0
)

// AppendValue appends the ascending encoding of v to dst.
//
// Values are those the driver decodes into bson.D (plus int, []byte, []any,
// bson.M and bson.Raw). Types bsonutil does not know rank as objects there
// and encode here as the empty document, so the two stay consistent.
func AppendValue(dst []byte, v any) []byte {
	switch x := v.(type) {
	case bson.MinKey:
		return append(dst, tagMinKey)
	case bson.Undefined:
		return append(dst, tagUndefined)
	case nil, bson.Null:
		return append(dst, tagNull)
	case int32:
		return appendInt(dst, int64(x))
	case int64:
		return appendInt(dst, x)
	case int:
		return appendInt(dst, int64(x))
	case float64:
		return appendFloat(dst, x)
	case bson.Decimal128:
		return appendDecimal(dst, x)
	case string:
		// Room for the tag, the bytes and the terminator in one growth
		// (an escaped zero byte may still grow it once more).
		return appendString(append(slices.Grow(dst, len(x)+3), tagString), x)
	case bson.Symbol:
		// Symbols compare as strings, so they must encode as strings.
		return appendString(append(dst, tagString), string(x))
	case bson.D:
		return appendDoc(dst, x)
	case bson.M:
		return appendDoc(dst, sortedD(x))
	case bson.Raw:
		return appendDoc(dst, bsonutil.ToD(x))
	case bson.A:
		return appendArray(dst, x)
	case []any:
		return appendArray(dst, x)
	case bson.Binary:
		return appendBinary(dst, x.Subtype, x.Data)
	case []byte:
		return appendBinary(dst, 0, x)
	case bson.ObjectID:
		return append(append(slices.Grow(dst, 1+len(x)), tagObjectID), x[:]...)
	case bool:
		if x {
			return append(dst, tagTrue)
		}
		return append(dst, tagFalse)
	case bson.DateTime:
		return AppendDate(dst, int64(x))
	case bson.Timestamp:
		return appendUint32(appendUint32(append(dst, tagTimestamp), x.T), x.I)
	case bson.Regex:
		dst = appendString(append(dst, tagRegex), x.Pattern)
		return appendString(dst, x.Options)
	case bson.DBPointer:
		dst = appendString(append(dst, tagDBPointer), x.DB)
		return append(dst, x.Pointer[:]...)
	case bson.JavaScript:
		return appendString(append(dst, tagCode), string(x))
	case bson.CodeWithScope:
		// bsonutil.Compare orders code-with-scope by code alone; encoding the
		// scope too would make values it calls equal encode differently.
		return appendString(append(dst, tagCodeScope), string(x.Code))
	case bson.MaxKey:
		return append(dst, tagMaxKey)
	}
	return appendDoc(dst, nil)
}

// AppendValueDesc appends the descending encoding of v: the ascending
// encoding with every bit inverted. Because ascending encodings are
// prefix-free, inversion reverses the order of whole values, and the
// inverted terminators still end each value before the next component.
func AppendValueDesc(dst []byte, v any) []byte {
	start := len(dst)
	dst = AppendValue(dst, v)
	invert(dst[start:])
	return dst
}

// AppendKey appends a compound index key: the components in order, each
// ascending or descending as descending[i] says (missing entries mean
// ascending). Keys compare component-wise because each component is
// self-delimiting.
func AppendKey(dst []byte, values []any, descending []bool) []byte {
	for i, v := range values {
		if i < len(descending) && descending[i] {
			dst = AppendValueDesc(dst, v)
		} else {
			dst = AppendValue(dst, v)
		}
	}
	return dst
}

// AppendDate appends the ascending encoding of bson.DateTime(ms). It is the
// TTL index's hot path, so it avoids the type switch.
func AppendDate(dst []byte, ms int64) []byte {
	// Flipping the sign bit turns two's complement order into unsigned order.
	// Grown once for the tag and the eight bytes: appending them one
	// after the other to a nil dst would allocate twice.
	return appendUint64(append(slices.Grow(dst, 9), tagDate), uint64(ms)^(1<<63))
}

// PrefixEnd returns the smallest key greater than every key that starts
// with prefix, for use as an exclusive upper bound. It returns nil when no
// such key exists (prefix is empty or all 0xFF), meaning "no upper bound".
func PrefixEnd(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xFF {
			end := make([]byte, i+1)
			copy(end, prefix)
			end[i]++
			return end
		}
	}
	return nil
}

// appendString writes s with 0x00 escaped as 0x00 0xFF and terminated by
// 0x00 0x01. The terminator sorts below every byte that can continue a
// string (including an escaped 0x00), so a string sorts before its
// extensions, and no encoding is a prefix of another.
func appendString(dst []byte, s string) []byte {
	for {
		i := indexZero(s)
		if i < 0 {
			break
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, 0x00, 0xFF)
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, 0x00, 0x01)
}

func indexZero(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return i
		}
	}
	return -1
}

// appendDoc mirrors bsonutil's compareDocs: per element the value's type
// rank, then the field name, then the value; a shorter document sorts first
// because tagEnd is below every rank byte.
func appendDoc(dst []byte, d bson.D) []byte {
	dst = append(dst, tagObject)
	for _, e := range d {
		dst = append(dst, rankTag(e.Value))
		dst = appendString(dst, e.Key)
		dst = AppendValue(dst, e.Value)
	}
	return append(dst, tagEnd)
}

// appendArray mirrors compareArrays: elements in order (each value's tag
// already orders by rank), then length.
func appendArray(dst []byte, a []any) []byte {
	dst = append(dst, tagArray)
	for _, v := range a {
		dst = AppendValue(dst, v)
	}
	return append(dst, tagEnd)
}

// appendBinary orders by length, then subtype, then bytes, as MongoDB does;
// the fixed-width length also delimits the data, so no escaping is needed.
func appendBinary(dst []byte, subtype byte, data []byte) []byte {
	dst = appendUint32(append(dst, tagBinary), uint32(len(data)))
	dst = append(dst, subtype)
	return append(dst, data...)
}

// rankTag is the byte that stands for v's type rank inside a document
// element: the first tag of that rank.
func rankTag(v any) byte {
	switch bsonutil.Rank(v) {
	case bsonutil.RankMinKey:
		return tagMinKey
	case bsonutil.RankUndefined:
		return tagUndefined
	case bsonutil.RankNull:
		return tagNull
	case bsonutil.RankNumber:
		return tagNaN
	case bsonutil.RankString:
		return tagString
	case bsonutil.RankArray:
		return tagArray
	case bsonutil.RankBinary:
		return tagBinary
	case bsonutil.RankObjectID:
		return tagObjectID
	case bsonutil.RankBool:
		return tagFalse
	case bsonutil.RankDate:
		return tagDate
	case bsonutil.RankTimestamp:
		return tagTimestamp
	case bsonutil.RankRegex:
		return tagRegex
	case bsonutil.RankDBPointer:
		return tagDBPointer
	case bsonutil.RankCode:
		return tagCode
	case bsonutil.RankCodeScope:
		return tagCodeScope
	case bsonutil.RankMaxKey:
		return tagMaxKey
	}
	return tagObject
}

// sortedD orders a map's fields by name. bsonutil.ToD uses map iteration
// order, which would make the same bson.M encode differently each time.
func sortedD(m bson.M) bson.D {
	d := make(bson.D, 0, len(m))
	for k, v := range m {
		d = append(d, bson.E{Key: k, Value: v})
	}
	sort.Slice(d, func(i, j int) bool { return d[i].Key < d[j].Key })
	return d
}

func appendUint32(dst []byte, v uint32) []byte {
	return append(dst, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func appendUint64(dst []byte, v uint64) []byte {
	return appendUint32(appendUint32(dst, uint32(v>>32)), uint32(v))
}

func invert(b []byte) {
	for i := range b {
		b[i] = ^b[i]
	}
}
