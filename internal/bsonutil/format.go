package bsonutil

import (
	"encoding/base64"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Format renders v the way MongoDB's server prints BSON inside error
// messages: { a: 1, b: "x" }, [ 1, 2 ], ObjectId('...'), new Date(ms).
func Format(v any) string {
	var b strings.Builder
	format(&b, v)
	return b.String()
}

func format(b *strings.Builder, v any) {
	switch x := v.(type) {
	case bson.D:
		formatDoc(b, x)
	case bson.A:
		formatArray(b, x)
	case []any:
		formatArray(b, bson.A(x))
	case bson.M, bson.Raw:
		formatDoc(b, ToD(x))
	default:
		b.WriteString(formatScalar(v))
	}
}

func formatDoc(b *strings.Builder, d bson.D) {
	if len(d) == 0 {
		b.WriteString("{}")
		return
	}
	b.WriteString("{ ")
	for i, e := range d {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.Key)
		b.WriteString(": ")
		format(b, e.Value)
	}
	b.WriteString(" }")
}

func formatArray(b *strings.Builder, a bson.A) {
	if len(a) == 0 {
		b.WriteString("[]")
		return
	}
	b.WriteString("[ ")
	for i, e := range a {
		if i > 0 {
			b.WriteString(", ")
		}
		format(b, e)
	}
	b.WriteString(" ]")
}

func formatScalar(v any) string {
	switch x := v.(type) {
	case nil, bson.Null:
		return "null"
	case string:
		return strconv.Quote(x)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return formatDouble(x)
	case bool:
		return strconv.FormatBool(x)
	case bson.ObjectID:
		return "ObjectId('" + x.Hex() + "')"
	case bson.DateTime:
		return "new Date(" + strconv.FormatInt(int64(x), 10) + ")"
	case bson.Decimal128:
		return x.String()
	case bson.Timestamp:
		return "Timestamp(" + strconv.FormatUint(uint64(x.T), 10) + ", " + strconv.FormatUint(uint64(x.I), 10) + ")"
	case bson.Regex:
		return "/" + x.Pattern + "/" + x.Options
	case bson.Binary:
		return "BinData(" + strconv.Itoa(int(x.Subtype)) + ", " + strings.ToUpper(hex.EncodeToString(x.Data)) + ")"
	case bson.MinKey:
		return "MinKey"
	case bson.MaxKey:
		return "MaxKey"
	case bson.Undefined:
		return "undefined"
	case bson.Symbol:
		return strconv.Quote(string(x))
	case bson.JavaScript:
		return string(x)
	case []byte:
		return "BinData(0, " + base64.StdEncoding.EncodeToString(x) + ")"
	}
	return "?"
}

// formatDouble prints whole doubles with ".0" as the server does (1.0, not 1).
func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan.0"
	case math.IsInf(f, 1):
		return "inf.0"
	case math.IsInf(f, -1):
		return "-inf.0"
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// DateString formats a BSON date as MongoDB's ISO form (for messages).
func DateString(d bson.DateTime) string {
	return time.UnixMilli(int64(d)).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
