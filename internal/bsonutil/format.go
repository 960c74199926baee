package bsonutil

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// MongoDB quotes values in error messages with BSONObj::toString, a
// JavaScript-like form ({ a: 1, b: "x" }). Format reproduces it so messages
// match byte for byte; every package formats through it.

// FormatElem formats one field as "name: value".
func FormatElem(name string, v any) string {
	var b strings.Builder
	writeElem(&b, name, v)
	return b.String()
}

// Format renders v the way MongoDB prints BSON inside error messages:
// { a: 1, b: "x" }, [ 1, 2 ], ObjectId('...'), new Date(ms), 1.0.
func Format(v any) string {
	var b strings.Builder
	writeValue(&b, v)
	return b.String()
}

func writeElem(b *strings.Builder, name string, v any) {
	b.WriteString(name)
	b.WriteString(": ")
	writeValue(b, v)
}

func writeValue(b *strings.Builder, v any) {
	switch x := v.(type) {
	case bson.D, bson.M, bson.Raw:
		writeDoc(b, ToD(x))
	case bson.A, []any:
		writeArr(b, ToA(x))
	default:
		writeScalar(b, v)
	}
}

func writeDoc(b *strings.Builder, d bson.D) {
	if len(d) == 0 {
		b.WriteString("{}")
		return
	}
	b.WriteString("{ ")
	for i, e := range d {
		if i > 0 {
			b.WriteString(", ")
		}
		writeElem(b, e.Key, e.Value)
	}
	b.WriteString(" }")
}

func writeArr(b *strings.Builder, a bson.A) {
	if len(a) == 0 {
		b.WriteString("[]")
		return
	}
	b.WriteString("[ ")
	for i, v := range a {
		if i > 0 {
			b.WriteString(", ")
		}
		writeValue(b, v)
	}
	b.WriteString(" ]")
}

func writeScalar(b *strings.Builder, v any) {
	if s, ok := simpleScalar(v); ok {
		b.WriteString(s)
		return
	}
	switch x := v.(type) {
	case string:
		writeQuoted(b, x)
	case bson.Symbol:
		writeQuoted(b, string(x))
	case bson.Binary:
		writeBinary(b, x)
	case []byte:
		writeBinary(b, bson.Binary{Data: x})
	case bson.JavaScript:
		writeTruncated(b, string(x), 80, 70, "...")
	case bson.CodeWithScope:
		b.WriteString("CodeWScope( " + string(x.Code) + ", " + Format(x.Scope) + ")")
	default:
		b.WriteString("?type=" + strconv.Itoa(TypeNumber(v)))
	}
}

// simpleScalar formats the values whose form is a fixed template.
func simpleScalar(v any) (string, bool) {
	switch x := v.(type) {
	case nil, bson.Null:
		return "null", true
	case bool:
		return strconv.FormatBool(x), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case float64:
		return FormatDouble(x), true
	case bson.Decimal128:
		return x.String(), true
	}
	return otherScalar(v)
}

func otherScalar(v any) (string, bool) {
	switch x := v.(type) {
	case bson.DateTime:
		return "new Date(" + strconv.FormatInt(int64(x), 10) + ")", true
	case bson.ObjectID:
		return "ObjectId('" + x.Hex() + "')", true
	case bson.Timestamp:
		return "Timestamp(" + strconv.FormatUint(uint64(x.T), 10) + ", " +
			strconv.FormatUint(uint64(x.I), 10) + ")", true
	case bson.Regex:
		return "/" + x.Pattern + "/" + x.Options, true
	case bson.Undefined:
		return "undefined", true
	case bson.MinKey:
		return "MinKey", true
	case bson.MaxKey:
		return "MaxKey", true
	case bson.DBPointer:
		return "DBRef('" + x.DB + "'," + x.Pointer.Hex() + ")", true
	}
	return "", false
}

// writeQuoted quotes a string, cutting long ones as MongoDB does (its limit
// counts the trailing NUL byte).
func writeQuoted(b *strings.Builder, s string) {
	b.WriteByte('"')
	if len(s)+1 > 160 {
		b.WriteString(s[:150])
		b.WriteString("...\"")
		return
	}
	b.WriteString(s)
	b.WriteByte('"')
}

func writeTruncated(b *strings.Builder, s string, limit, keep int, suffix string) {
	if len(s)+1 > limit {
		b.WriteString(s[:keep] + suffix)
		return
	}
	b.WriteString(s)
}

func writeBinary(b *strings.Builder, x bson.Binary) {
	if x.Subtype == 4 && len(x.Data) == 16 {
		b.WriteString("UUID(\"" + FormatUUID(x.Data) + "\")")
		return
	}
	b.WriteString("BinData(" + strconv.Itoa(int(x.Subtype)) + ", ")
	data, suffix := x.Data, ")"
	if len(data) > 80 {
		data, suffix = data[:70], "...)"
	}
	b.WriteString(strings.ToUpper(hex.EncodeToString(data)) + suffix)
}

// FormatDouble is C's "%.16g" with ".0" added when the result has no '.',
// 'E' or 'N' in it, as MongoDB's StringBuilder::appendDoubleNice does.
func FormatDouble(f float64) string {
	var s string
	switch {
	case math.IsNaN(f):
		s = "nan"
	case math.IsInf(f, 1):
		s = "inf"
	case math.IsInf(f, -1):
		s = "-inf"
	default:
		s = strconv.FormatFloat(f, 'g', 16, 64)
	}
	if !strings.ContainsAny(s, ".EN") {
		s += ".0"
	}
	return s
}

// FormatUUID writes a UUID's 16 bytes as mongod's messages do
// (8-4-4-4-12 hex digits); other lengths are plain hex.
func FormatUUID(b []byte) string {
	h := hex.EncodeToString(b)
	if len(b) != 16 {
		return h
	}
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// StreamDouble is f as a C++ ostream prints it by default (six significant
// digits; nan, inf and -inf in lower case), as mongod's messages show
// numbers they stream.
func StreamDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}
