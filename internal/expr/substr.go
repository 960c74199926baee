package expr

import (
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// evalSubstrBytes implements $substrBytes and its old name $substr (whose
// messages still say $substrBytes, as MongoDB's do).
func evalSubstrBytes(_ string, vals []any) (any, error) {
	const op = "$substrBytes"
	s, err := coerceToString(vals[0])
	if err != nil {
		return nil, err
	}
	if !isBinaryNumber(vals[1]) {
		return nil, mongoerr.Newf(mongoerr.Location16034, "%s:  starting index must be a numeric type (is BSON type %s)",
			op, typeName(vals[1]))
	}
	if !isBinaryNumber(vals[2]) {
		return nil, mongoerr.Newf(mongoerr.Location16035, "%s:  length must be a numeric type (is BSON type %s)",
			op, typeName(vals[2]))
	}
	lower, length := toInt64(vals[1]), toInt64(vals[2])
	if lower < 0 {
		return nil, mongoerr.Newf(mongoerr.Location50752, "%s:  starting index must be non-negative (got: %d)", op, lower)
	}
	if length < 0 || lower+length > int64(len(s)) {
		length = max(int64(len(s))-lower, 0)
	}
	return byteRange(op, s, int(lower), int(length))
}

// isBinaryNumber accepts the numeric types $substrBytes allows (not decimal).
func isBinaryNumber(v any) bool {
	switch v.(type) {
	case int32, int64, float64:
		return true
	}
	return false
}

func byteRange(op, s string, lower, length int) (any, error) {
	if lower < len(s) && !utf8.RuneStart(s[lower]) {
		return nil, mongoerr.Newf(mongoerr.Location28656, "%s:  Invalid range, starting index is a UTF-8 continuation byte.", op)
	}
	if end := lower + length; end < len(s) && !utf8.RuneStart(s[end]) {
		return nil, mongoerr.Newf(mongoerr.Location28657, "%s:  Invalid range, ending index is in the middle of a UTF-8 character.", op)
	}
	if lower >= len(s) {
		return "", nil
	}
	return s[lower : lower+length], nil
}

func evalSubstrCP(name string, vals []any) (any, error) {
	s, err := coerceToString(vals[0])
	if err != nil {
		return nil, err
	}
	if err := substrCPArg(name, vals[1], "starting index", [2]mongoerr.Code{mongoerr.Location34450, mongoerr.Location34451}); err != nil {
		return nil, err
	}
	if err := substrCPArg(name, vals[2], "length", [2]mongoerr.Code{mongoerr.Location34452, mongoerr.Location34453}); err != nil {
		return nil, err
	}
	start, length := toInt64(vals[1]), toInt64(vals[2])
	if length < 0 {
		return nil, mongoerr.Newf(mongoerr.Location34454, "%s: length must be a nonnegative integer.", name)
	}
	if start < 0 {
		return nil, mongoerr.Newf(mongoerr.Location34455, "%s: the starting index must be nonnegative integer.", name)
	}
	runes := []rune(s)
	if start >= int64(len(runes)) {
		return "", nil
	}
	end := min(start+length, int64(len(runes)))
	return string(runes[start:end]), nil
}

func substrCPArg(name string, v any, what string, codes [2]mongoerr.Code) error {
	if !isNumber(v) {
		return mongoerr.Newf(codes[0], "%s: %s must be a numeric type (is BSON type %s)", name, what, typeName(v))
	}
	if !isIntegral32(v) {
		return mongoerr.Newf(codes[1], "%s: %s cannot be represented as a 32-bit integral value: %s",
			name, what, formatValue(v))
	}
	return nil
}

// defaultTrimChars is MongoDB's whitespace set for $trim without chars.
const defaultTrimChars = "\x00 \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"

func compileTrim(name string, arg any) (node, error) {
	if !isDocument(arg) {
		return nil, mongoerr.Newf(mongoerr.Location50696, "%s only supports an object as an argument, found %s", name, typeName(arg))
	}
	named, err := namedArgs(arg, []string{"input", "chars"}, func(f string) error {
		return mongoerr.Newf(mongoerr.Location50694, "%s found an unknown argument: %s", name, f)
	})
	if err != nil {
		return nil, err
	}
	if named["input"] == nil {
		return nil, mongoerr.Newf(mongoerr.Location50695, "%s requires an 'input' field", name)
	}
	return trimNode(name, named["input"], named["chars"]), nil
}

func trimNode(name string, input, chars node) node {
	return fn(func(c *ctx) (any, error) {
		in, err := input.eval(c)
		if err != nil || nullish(in) {
			return nil, err
		}
		s, ok := in.(string)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location50699, "%s requires its input to be a string, got %s (of type %s) instead.",
				name, formatValue(in), typeName(in))
		}
		cutset, isNull, err := trimChars(c, name, chars)
		if err != nil || isNull {
			return nil, err
		}
		return doTrim(name, s, cutset), nil
	})
}

func trimChars(c *ctx, name string, chars node) (string, bool, error) {
	if chars == nil {
		return defaultTrimChars, false, nil
	}
	v, err := chars.eval(c)
	if err != nil || nullish(v) {
		return "", err == nil, err
	}
	s, ok := v.(string)
	if !ok {
		return "", false, mongoerr.Newf(mongoerr.Location50700, "%s requires 'chars' to be a string, got %s (of type %s) instead.",
			name, formatValue(v), typeName(v))
	}
	return s, false, nil
}

func doTrim(name, s, cutset string) string {
	switch name {
	case "$ltrim":
		return strings.TrimLeft(s, cutset)
	case "$rtrim":
		return strings.TrimRight(s, cutset)
	}
	return strings.Trim(s, cutset)
}

// isoDate formats a date as MongoDB's default "%Y-%m-%dT%H:%M:%S.%LZ".
func isoDate(d bson.DateTime) string {
	return d.Time().UTC().Format("2006-01-02T15:04:05.000Z")
}
