package expr

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func addStringOps(m map[string]compileFn) {
	m["$concat"] = variadic(evalConcat)
	m["$toLower"] = fixed(1, caseOp(asciiLower))
	m["$toUpper"] = fixed(1, caseOp(asciiUpper))
	m["$strcasecmp"] = fixed(2, evalStrcasecmp)
	m["$substr"] = fixed(3, evalSubstrBytes)
	m["$substrBytes"] = fixed(3, evalSubstrBytes)
	m["$substrCP"] = fixed(3, evalSubstrCP)
	m["$strLenBytes"] = fixed(1, evalStrLenBytes)
	m["$strLenCP"] = fixed(1, evalStrLenCP)
	m["$split"] = fixedLoop(2, evalSplit)
	m["$indexOfBytes"] = ranged(2, 4, evalIndexOfBytes)
	m["$indexOfCP"] = ranged(2, 4, evalIndexOfCP)
	m["$trim"] = compileTrim
	m["$ltrim"] = compileTrim
	m["$rtrim"] = compileTrim
	addRegexOps(m)
}

// coerceToString converts v as MongoDB's Value::coerceToString does for
// the string operators: null becomes "", numbers and dates are printed,
// documents, arrays and most other types are an error.
func coerceToString(v any) (string, error) {
	switch x := v.(type) {
	case nil, bson.Null, bson.Undefined, missing:
		return "", nil
	case string:
		return x, nil
	case bson.Symbol:
		return string(x), nil
	case bson.JavaScript:
		return string(x), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return doubleToString(x), nil
	case bson.Decimal128:
		return x.String(), nil
	case bson.DateTime:
		return isoDate(x), nil
	case bson.Timestamp:
		return formatValue(x), nil
	}
	return "", mongoerr.Newf(mongoerr.Location16007, "can't convert from BSON type %s to String", typeName(v))
}

// doubleToString prints a double for $toString and friends. Mayfly uses
// the shortest representation that round-trips; MongoDB prints with C++
// stream defaults (6 significant digits), so long fractions differ.
func doubleToString(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0 && math.Signbit(f):
		return "-0"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func evalConcat(_ string, vals []any) (any, error) {
	n := 0
	for _, v := range vals {
		if nullish(v) {
			return nil, nil
		}
		s, ok := v.(string)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location16702, "$concat only supports strings, not %s", typeName(v))
		}
		n += len(s)
	}
	if err := checkStringSize(n); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.Grow(n)
	for _, v := range vals {
		b.WriteString(v.(string))
	}
	return b.String(), nil
}

// caseOp implements $toLower/$toUpper, which in MongoDB change ASCII
// letters only.
func caseOp(conv func(string) string) evalFn {
	return func(_ string, vals []any) (any, error) {
		s, err := coerceToString(vals[0])
		if err != nil {
			return nil, err
		}
		return conv(s), nil
	}
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func evalStrcasecmp(_ string, vals []any) (any, error) {
	a, err := coerceToString(vals[0])
	if err != nil {
		return nil, err
	}
	b, err := coerceToString(vals[1])
	if err != nil {
		return nil, err
	}
	return int32(strings.Compare(asciiUpper(a), asciiUpper(b))), nil
}

func evalStrLenBytes(_ string, vals []any) (any, error) {
	s, ok := vals[0].(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location34473, "$strLenBytes requires a string argument, found: %s", typeName(vals[0]))
	}
	return int32(len(s)), nil
}

func evalStrLenCP(_ string, vals []any) (any, error) {
	s, ok := vals[0].(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location34471, "$strLenCP requires a string argument, found: %s", typeName(vals[0]))
	}
	return int32(utf8.RuneCountInString(s)), nil
}

func evalSplit(m meter, _ string, vals []any) (any, error) {
	in, sep := vals[0], vals[1]
	if nullish(in) || nullish(sep) {
		return nil, nil
	}
	s, ok := in.(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40085,
			"$split requires an expression that evaluates to a string as a first argument, found: %s", typeName(in))
	}
	d, ok := sep.(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40086,
			"$split requires an expression that evaluates to a string as a second argument, found: %s", typeName(sep))
	}
	if d == "" {
		return nil, mongoerr.New(mongoerr.Location40087, "$split requires a non-empty separator")
	}
	out := bson.A{}
	for part := range strings.SplitSeq(s, d) {
		if err := m.step(); err != nil {
			return nil, err
		}
		out = append(out, part)
	}
	return out, nil
}

// indexBounds validates the optional start and end arguments of
// $indexOfBytes/$indexOfCP/$indexOfArray and clamps end to length.
func indexBounds(name string, vals []any, length int) (int, int, error) {
	start, end := 0, length
	if len(vals) > 2 {
		s, err := nonNegativeIndex(name, vals[2], "starting index")
		if err != nil {
			return 0, 0, err
		}
		start = s
	}
	if len(vals) > 3 {
		e, err := nonNegativeIndex(name, vals[3], "ending index")
		if err != nil {
			return 0, 0, err
		}
		end = min(e, length)
	}
	return start, end, nil
}

func nonNegativeIndex(name string, v any, what string) (int, error) {
	if !isNumber(v) || !isIntegral(v) {
		return 0, mongoerr.Newf(mongoerr.Location40096, "%s requires an integral %s, found a value of type: %s, with value: %s",
			name, what, typeName(v), formatValue(v))
	}
	i := toInt64(v)
	if i < 0 {
		return 0, mongoerr.Newf(mongoerr.Location40097, "%s requires a nonnegative %s, found: %s", name, what, formatValue(v))
	}
	return int(min(i, 1<<31)), nil
}

// stringArgs checks the two string operands of the $indexOf operators.
func stringArgs(name string, vals []any, codes [2]mongoerr.Code) (string, string, bool, error) {
	if nullish(vals[0]) {
		return "", "", true, nil
	}
	s, ok := vals[0].(string)
	if !ok {
		return "", "", false, mongoerr.Newf(codes[0], "%s requires a string as the first argument, found: %s",
			name, typeName(vals[0]))
	}
	t, ok := vals[1].(string)
	if !ok {
		return "", "", false, mongoerr.Newf(codes[1], "%s requires a string as the second argument, found: %s",
			name, typeName(vals[1]))
	}
	return s, t, false, nil
}

func evalIndexOfBytes(name string, vals []any) (any, error) {
	s, tok, isNull, err := stringArgs(name, vals, [2]mongoerr.Code{mongoerr.Location40091, mongoerr.Location40092})
	if err != nil || isNull {
		return nil, err
	}
	start, end, err := indexBounds(name, vals, len(s))
	if err != nil {
		return nil, err
	}
	if start > len(s) || end < start {
		return int32(-1), nil
	}
	i := strings.Index(s[start:end], tok)
	if i < 0 {
		return int32(-1), nil
	}
	return int32(start + i), nil
}

func evalIndexOfCP(name string, vals []any) (any, error) {
	s, tok, isNull, err := stringArgs(name, vals, [2]mongoerr.Code{mongoerr.Location40093, mongoerr.Location40094})
	if err != nil || isNull {
		return nil, err
	}
	runes := []rune(s)
	start, end, err := indexBounds(name, vals, len(runes))
	if err != nil {
		return nil, err
	}
	if s == "" && tok == "" && start == 0 {
		return int32(0), nil
	}
	for i := start; i < end; i++ {
		if strings.HasPrefix(string(runes[i:]), tok) {
			return int32(i), nil
		}
	}
	return int32(-1), nil
}
