package query

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// This file gives the tests mongo-shell syntax for BSON values, so that
// cases read like MongoDB's jstests: {a: [1, 2.5, "x"], b: /^re/i}.
// Numbers without '.' or exponent are int32 (int64 when too large);
// NumberLong, NumberDecimal, ObjectId, Date, Timestamp, BinData, Symbol,
// MinKey, MaxKey, undefined, NaN and Infinity are spelled as in the shell.

// shellParser parses one value at a time from s.
type shellParser struct {
	s string
	i int
}

// mustShell parses a whole string as one value; it panics on bad input,
// which in a test is a bug in the test.
func mustShell(s string) any {
	p := &shellParser{s: s}
	v, err := p.value()
	if err == nil {
		p.ws()
		if p.i != len(p.s) {
			err = p.errorf("trailing input")
		}
	}
	if err != nil {
		panic(err)
	}
	return v
}

// doc parses a document in shell syntax.
func doc(s string) bson.D {
	d, ok := mustShell(s).(bson.D)
	if !ok {
		panic("not a document: " + s)
	}
	return d
}

func (p *shellParser) errorf(format string, args ...any) error {
	return fmt.Errorf("shell syntax at %d of %q: %s", p.i, p.s, fmt.Sprintf(format, args...))
}

func (p *shellParser) ws() {
	for p.i < len(p.s) && strings.ContainsRune(" \t\r\n", rune(p.s[p.i])) {
		p.i++
	}
}

func (p *shellParser) peek() byte {
	p.ws()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *shellParser) expect(c byte) error {
	if p.peek() != c {
		return p.errorf("want %q", c)
	}
	p.i++
	return nil
}

func (p *shellParser) value() (any, error) {
	switch c := p.peek(); {
	case c == '{':
		return p.document()
	case c == '[':
		return p.array()
	case c == '"' || c == '\'':
		return p.str()
	case c == '/':
		return p.regex()
	case c == '-' || c == '.' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 0:
		return nil, p.errorf("unexpected end")
	}
	return p.word()
}

func (p *shellParser) document() (any, error) {
	p.i++
	d := bson.D{}
	for p.peek() != '}' {
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		if err := p.expect(':'); err != nil {
			return nil, err
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: key, Value: v})
		if p.peek() == ',' {
			p.i++
		}
	}
	p.i++
	return d, nil
}

func (p *shellParser) key() (string, error) {
	if c := p.peek(); c == '"' || c == '\'' {
		s, err := p.str()
		return s.(string), err
	}
	start := p.i
	for p.i < len(p.s) && !strings.ContainsRune(": \t,}", rune(p.s[p.i])) {
		p.i++
	}
	if start == p.i {
		return "", p.errorf("want a key")
	}
	return p.s[start:p.i], nil
}

func (p *shellParser) array() (any, error) {
	p.i++
	a := bson.A{}
	for p.peek() != ']' {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		if p.peek() == ',' {
			p.i++
		}
	}
	p.i++
	return a, nil
}

// str parses a quoted string with Go escapes; single quotes work too.
func (p *shellParser) str() (any, error) {
	q := p.s[p.i]
	j := p.i + 1
	for j < len(p.s) && p.s[j] != q {
		if p.s[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(p.s) {
		return nil, p.errorf("unterminated string")
	}
	body := p.s[p.i+1 : j]
	p.i = j + 1
	if q == '\'' {
		body = strings.ReplaceAll(strings.ReplaceAll(body, `\'`, `'`), `"`, `\"`)
	}
	s, err := strconv.Unquote(`"` + body + `"`)
	if err != nil {
		return nil, p.errorf("bad string: %v", err)
	}
	return s, nil
}

// regex parses /pattern/flags; "\/" stands for a slash in the pattern.
func (p *shellParser) regex() (any, error) {
	var b strings.Builder
	j := p.i + 1
	for ; j < len(p.s) && p.s[j] != '/'; j++ {
		if p.s[j] == '\\' && j+1 < len(p.s) && p.s[j+1] == '/' {
			j++
		} else if p.s[j] == '\\' && j+1 < len(p.s) {
			b.WriteByte('\\')
			j++
		}
		b.WriteByte(p.s[j])
	}
	if j >= len(p.s) {
		return nil, p.errorf("unterminated regex")
	}
	k := j + 1
	for k < len(p.s) && p.s[k] >= 'a' && p.s[k] <= 'z' {
		k++
	}
	p.i = k
	return bson.Regex{Pattern: b.String(), Options: p.s[j+1 : k]}, nil
}

func (p *shellParser) number() (any, error) {
	if strings.HasPrefix(p.s[p.i:], "-Infinity") {
		p.i += len("-Infinity")
		return math.Inf(-1), nil
	}
	start := p.i
	for p.i < len(p.s) && strings.ContainsRune("+-.0123456789eE", rune(p.s[p.i])) {
		p.i++
	}
	text := p.s[start:p.i]
	if strings.ContainsAny(text, ".eE") {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, p.errorf("bad number %q", text)
		}
		return f, nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return nil, p.errorf("bad number %q", text)
	}
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return int32(n), nil
	}
	return n, nil
}

// word parses keywords and constructor calls.
func (p *shellParser) word() (any, error) {
	start := p.i
	for p.i < len(p.s) && (isWordByte(p.s[p.i])) {
		p.i++
	}
	name := p.s[start:p.i]
	if v, ok := shellConstants(name); ok {
		return v, nil
	}
	if p.peek() != '(' {
		return nil, p.errorf("unknown word %q", name)
	}
	p.i++
	var args []any
	for p.peek() != ')' {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		args = append(args, v)
		if p.peek() == ',' {
			p.i++
		}
	}
	p.i++
	return shellCall(name, args)
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func shellConstants(name string) (any, bool) {
	switch name {
	case "true":
		return true, true
	case "false":
		return false, true
	case "null":
		return nil, true
	case "undefined":
		return bson.Undefined{}, true
	case "MinKey":
		return bson.MinKey{}, true
	case "MaxKey":
		return bson.MaxKey{}, true
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	}
	return nil, false
}

func shellCall(name string, args []any) (any, error) {
	arg := func(i int) any {
		if i < len(args) {
			return args[i]
		}
		return nil
	}
	switch name {
	case "NumberLong":
		return toInt64(arg(0)), nil
	case "NumberInt":
		return int32(toInt64(arg(0))), nil
	case "NumberDecimal":
		return bson.ParseDecimal128(fmt.Sprint(arg(0)))
	case "ObjectId":
		return shellObjectID(arg(0))
	case "Date":
		return bson.DateTime(toInt64(arg(0))), nil
	case "Timestamp":
		return bson.Timestamp{T: uint32(toInt64(arg(0))), I: uint32(toInt64(arg(1)))}, nil
	case "BinData":
		data, err := hex.DecodeString(fmt.Sprint(arg(1)))
		return bson.Binary{Subtype: byte(toInt64(arg(0))), Data: data}, err
	case "Symbol":
		return bson.Symbol(fmt.Sprint(arg(0))), nil
	}
	return nil, fmt.Errorf("unknown constructor %s", name)
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int32:
		return int64(n)
	case int64:
		return n
	case float64:
		return int64(n)
	case string:
		i, _ := strconv.ParseInt(n, 10, 64)
		return i
	}
	return 0
}

func shellObjectID(v any) (any, error) {
	if s, ok := v.(string); ok {
		return bson.ObjectIDFromHex(s)
	}
	var id bson.ObjectID
	id[11] = byte(toInt64(v))
	return id, nil
}

// shell formats a value in the syntax mustShell parses, for messages.
func shell(v any) string {
	switch x := v.(type) {
	case bson.D:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = shellKey(e.Key) + ": " + shell(e.Value)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case bson.A:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = shell(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return shellScalar(v)
}

func shellKey(k string) string {
	if k == "" || strings.ContainsAny(k, ": \t,}'\"") {
		return strconv.Quote(k)
	}
	return k
}

func shellScalar(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case nil:
		return "null"
	case int64:
		return fmt.Sprintf("NumberLong(%d)", x)
	case float64:
		return shellDouble(x)
	case bson.Decimal128:
		return fmt.Sprintf("NumberDecimal(%q)", x.String())
	case bson.Regex:
		return "/" + strings.ReplaceAll(x.Pattern, "/", `\/`) + "/" + x.Options
	case bson.DateTime:
		return fmt.Sprintf("Date(%d)", int64(x))
	case bson.ObjectID:
		return fmt.Sprintf("ObjectId(%q)", x.Hex())
	case bson.Timestamp:
		return fmt.Sprintf("Timestamp(%d, %d)", x.T, x.I)
	case bson.Binary:
		return fmt.Sprintf("BinData(%d, %q)", x.Subtype, hex.EncodeToString(x.Data))
	case bson.Symbol:
		return fmt.Sprintf("Symbol(%q)", string(x))
	case bson.Undefined:
		return "undefined"
	case bson.MinKey:
		return "MinKey"
	case bson.MaxKey:
		return "MaxKey"
	}
	return fmt.Sprint(v)
}

func shellDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
