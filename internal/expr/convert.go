package expr

import (
	"math"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// conversionFailure is MongoDB's ConversionFailure code, the only error
// that $convert's onError catches.
const conversionFailure = mongoerr.ConversionFailure

func addTypeOps(m map[string]compileFn) {
	m["$type"] = fixed(1, func(_ string, v []any) (any, error) { return typeName(v[0]), nil })
	m["$isNumber"] = fixed(1, func(_ string, v []any) (any, error) { return isNumber(v[0]), nil })
	m["$convert"] = compileConvert
	for name, to := range map[string]string{
		"$toString": "string", "$toInt": "int", "$toLong": "long", "$toDouble": "double",
		"$toDecimal": "decimal", "$toBool": "bool", "$toDate": "date", "$toObjectId": "objectId",
	} {
		m[name] = conversionAlias(to)
	}
}

// conversionAlias builds $toInt and friends: $convert without onError or
// onNull.
func conversionAlias(to string) compileFn {
	return func(name string, arg any) (node, error) {
		nodes, err := parseArgs(arg)
		if err != nil {
			return nil, err
		}
		if len(nodes) != 1 {
			return nil, mongoerr.Newf(mongoerr.Location50723, "%s requires a single argument, got %d", name, len(nodes))
		}
		return convertNode(nodes[0], constNode{to}, nil, nil), nil
	}
}

func compileConvert(_ string, arg any) (node, error) {
	if !isDocument(arg) {
		return nil, mongoerr.Newf(mongoerr.FailedToParse,
			"$convert expects an object of named arguments but found: %s", typeName(arg))
	}
	named, err := namedArgs(arg, []string{"input", "to", "onError", "onNull"}, func(f string) error {
		return mongoerr.Newf(mongoerr.FailedToParse, "$convert found an unknown argument: %s", f)
	})
	switch {
	case err != nil:
		return nil, err
	case named["input"] == nil:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Missing 'input' parameter to $convert")
	case named["to"] == nil:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Missing 'to' parameter to $convert")
	}
	return convertNode(named["input"], named["to"], named["onError"], named["onNull"]), nil
}

func convertNode(input, to, onError, onNull node) node {
	return fn(func(c *ctx) (any, error) {
		toVal, err := to.eval(c)
		if err != nil {
			return nil, err
		}
		in, err := input.eval(c)
		if err != nil {
			return nil, err
		}
		target, err := targetType(toVal)
		if err != nil {
			return nil, err
		}
		if nullish(in) {
			return evalOr(c, onNull, nil)
		}
		if target == "" {
			return nil, nil
		}
		out, err := convertValue(in, target)
		if err != nil && onError != nil && mongoerr.As(err).Code == conversionFailure {
			return onError.eval(c)
		}
		return out, err
	})
}

// bsonTypeNames maps $type numbers to names for a numeric 'to'.
var bsonTypeNames = map[int64]string{
	1: "double", 2: "string", 3: "object", 4: "array", 5: "binData", 6: "undefined", 7: "objectId",
	8: "bool", 9: "date", 10: "null", 11: "regex", 12: "dbPointer", 13: "javascript", 14: "symbol",
	15: "javascriptWithScope", 16: "int", 17: "timestamp", 18: "long", 19: "decimal", -1: "minKey", 127: "maxKey",
}

// targetType resolves 'to' to a type name; "" means 'to' was nullish.
func targetType(to any) (string, error) {
	switch {
	case nullish(to):
		return "", nil
	case isNumber(to):
		if !isIntegral(to) {
			return "", mongoerr.New(mongoerr.FailedToParse, "In $convert, numeric 'to' argument is not an integer")
		}
		name, ok := bsonTypeNames[toInt64(to)]
		if !ok {
			return "", mongoerr.Newf(mongoerr.FailedToParse,
				"In $convert, numeric value for 'to' does not correspond to a BSON type: %d", toInt64(to))
		}
		return name, nil
	}
	s, ok := to.(string)
	if !ok {
		return "", mongoerr.Newf(mongoerr.FailedToParse,
			"$convert's 'to' argument must be a string or number, but is %s", typeName(to))
	}
	if !contains(typeNameList(), s) && s != "missing" {
		return "", mongoerr.Newf(mongoerr.BadValue, "Unknown type name: %s", s)
	}
	return s, nil
}

func typeNameList() []string {
	out := make([]string, 0, len(bsonTypeNames))
	for _, n := range bsonTypeNames {
		out = append(out, n)
	}
	return out
}

func unsupportedConversion(in any, target string) error {
	return mongoerr.Newf(conversionFailure, "Unsupported conversion from %s to %s in $convert with no onError value",
		typeName(in), target)
}

// convertValue applies $convert's conversion table.
func convertValue(in any, target string) (any, error) {
	if target == "bool" {
		return convertToBool(in)
	}
	if typeName(in) == target && contains(identityTargets, target) {
		return in, nil
	}
	switch target {
	case "double":
		return toDoubleConv(in)
	case "int":
		return toIntConv(in, math.MinInt32, math.MaxInt32)
	case "long":
		return toIntConv(in, math.MinInt64, math.MaxInt64)
	case "decimal":
		return toDecimalConv(in)
	case "string":
		return toStringConv(in)
	case "date":
		return toDateConv(in)
	case "objectId":
		return toObjectIDConv(in)
	}
	return nil, unsupportedConversion(in, target)
}

// identityTargets are the types $convert may convert to themselves.
var identityTargets = []string{"double", "string", "objectId", "date", "int", "long", "decimal"}

// convertToBool follows truthiness; nullish inputs never get here.
func convertToBool(in any) (any, error) { return Truthy(in), nil }

func toDoubleConv(in any) (any, error) {
	switch x := in.(type) {
	case int32, int64:
		return toFloat(x), nil
	case bson.Decimal128:
		return decFromBSON(x).float(), nil
	case bool:
		return boolNum(x), nil
	case bson.DateTime:
		return float64(x), nil
	case string:
		return parseDouble(x)
	}
	return nil, unsupportedConversion(in, "double")
}

func boolNum(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func parseDouble(s string) (any, error) {
	if err := rejectHex(s); err != nil {
		return nil, err
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		return nil, parseNumberError(s, err)
	}
	return f, nil
}

func rejectHex(s string) error {
	if strings.HasPrefix(s, "0x") {
		return mongoerr.Newf(conversionFailure, "Illegal hexadecimal input in $convert with no onError value: %s", s)
	}
	return nil
}

func parseNumberError(s string, err error) error {
	reason := "Did not consume whole string."
	if strings.Contains(err.Error(), "range") {
		reason = "Overflow"
	}
	return mongoerr.Newf(conversionFailure, "Failed to parse number '%s' in $convert with no onError value: %s", s, reason)
}

// toIntConv converts to int (bounds of int32) or long (bounds of int64).
func toIntConv(in any, lo, hi int64) (any, error) {
	var i int64
	switch x := in.(type) {
	case int32, int64:
		i = toInt64(x)
	case bool:
		i = int64(boolNum(x))
	case bson.DateTime:
		if hi == math.MaxInt32 {
			return nil, unsupportedConversion(in, "int")
		}
		i = int64(x)
	case float64, bson.Decimal128:
		v, err := truncateToInt(x, lo, hi)
		if err != nil {
			return nil, err
		}
		i = v
	case string:
		v, err := parseInteger(x, hi == math.MaxInt32)
		if err != nil {
			return nil, err
		}
		i = v
	default:
		return nil, unsupportedConversion(in, intTargetName(hi))
	}
	if i < lo || i > hi {
		return nil, mongoerr.Newf(conversionFailure,
			"Conversion would overflow target type in $convert with no onError value: %d", i)
	}
	return intResult(i, hi), nil
}

func intTargetName(hi int64) string {
	if hi == math.MaxInt32 {
		return "int"
	}
	return "long"
}

func intResult(i, hi int64) any {
	if hi == math.MaxInt32 {
		return int32(i)
	}
	return i
}

func truncateToInt(x any, lo, hi int64) (int64, error) {
	f := toFloat(x)
	switch {
	case math.IsNaN(f):
		return 0, mongoerr.New(conversionFailure,
			"Attempt to convert NaN value to integer type in $convert with no onError value")
	case math.IsInf(f, 0):
		return 0, mongoerr.New(conversionFailure,
			"Attempt to convert infinity value to integer type in $convert with no onError value")
	case f < float64(lo) || f >= float64(hi)+1:
		return 0, mongoerr.Newf(conversionFailure,
			"Conversion would overflow target type in $convert with no onError value: %s", formatValue(x))
	}
	return int64(math.Trunc(f)), nil
}

func parseInteger(s string, int32Only bool) (int64, error) {
	if err := rejectHex(s); err != nil {
		return 0, err
	}
	bitSize := 64
	if int32Only {
		bitSize = 32
	}
	i, err := strconv.ParseInt(s, 10, bitSize)
	if err != nil {
		return 0, parseNumberError(s, err)
	}
	return i, nil
}

func toDecimalConv(in any) (any, error) {
	switch x := in.(type) {
	case int32, int64, float64:
		return toDecimal(x).bson(), nil
	case bool:
		return toDecimal(int64(boolNum(x))).bson(), nil
	case bson.DateTime:
		return toDecimal(int64(x)).bson(), nil
	case string:
		d, err := bson.ParseDecimal128(x)
		if err != nil {
			return nil, mongoerr.Newf(conversionFailure,
				"Failed to parse number '%s' in $convert with no onError value: Failed to parse string to decimal", x)
		}
		return d, nil
	}
	return nil, unsupportedConversion(in, "decimal")
}

func toStringConv(in any) (any, error) {
	switch x := in.(type) {
	case bool:
		return strconv.FormatBool(x), nil
	case bson.ObjectID:
		return x.Hex(), nil
	case int32, int64, float64, bson.Decimal128, bson.DateTime:
		return coerceToString(x)
	}
	return nil, unsupportedConversion(in, "string")
}

func toDateConv(in any) (any, error) {
	switch x := in.(type) {
	case int64:
		return bson.DateTime(x), nil
	case float64, bson.Decimal128:
		ms, err := truncateToInt(x, math.MinInt64, math.MaxInt64)
		return bson.DateTime(ms), err
	case bson.ObjectID:
		return bson.NewDateTimeFromTime(x.Timestamp()), nil
	case bson.Timestamp:
		return bson.DateTime(int64(x.T) * 1000), nil
	case string:
		return parseDateString(x)
	}
	return nil, unsupportedConversion(in, "date")
}

// dateLayouts are the ISO-8601 spellings $toDate accepts.
var dateLayouts = []string{
	"2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999Z0700", "2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04Z07:00",
	"2006-01-02T15:04", "2006-01-02",
}

func parseDateString(s string) (any, error) {
	for _, layout := range dateLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return bson.NewDateTimeFromTime(t), nil
		}
	}
	return nil, mongoerr.Newf(conversionFailure, "Error parsing date string '%s'", s)
}

func toObjectIDConv(in any) (any, error) {
	s, ok := in.(string)
	if !ok {
		return nil, unsupportedConversion(in, "objectId")
	}
	if len(s) != 24 {
		return nil, mongoerr.Newf(conversionFailure,
			"Failed to parse objectId '%s' in $convert with no onError value: "+
				"Invalid string length for parsing to OID, expected 24 but found %d", s, len(s))
	}
	id, err := bson.ObjectIDFromHex(s)
	if err != nil {
		return nil, mongoerr.Newf(conversionFailure,
			"Failed to parse objectId '%s' in $convert with no onError value: Invalid character found in hex string", s)
	}
	return id, nil
}
