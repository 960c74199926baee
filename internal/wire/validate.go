package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// MaxNestingDepth bounds how deeply documents and arrays may nest in a
// request. Beyond being MongoDB's own order of magnitude, it keeps every
// recursive walk of a request (validation, decoding, the command layer's)
// far from exhausting a goroutine stack, which would kill the process.
const MaxNestingDepth = 200

// validateDoc checks that doc is well-formed BSON. It is stricter than
// bson.Raw.Validate (string terminators, boolean bytes) and, unlike it,
// bounds nesting depth.
func validateDoc(doc []byte) error {
	rest, err := checkDoc(doc, 0)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("%d bytes after document", len(rest))
	}
	return nil
}

var (
	errShort    = errors.New("value runs past the end of its document")
	errTooDeep  = fmt.Errorf("document nesting exceeds %d levels", MaxNestingDepth)
	errNoCStr   = errors.New("unterminated C string")
	errBadStr   = errors.New("malformed string value")
	errBadBool  = errors.New("boolean byte is neither 0 nor 1")
	errBadScope = errors.New("malformed code-with-scope value")
)

// checkDoc validates the document at the start of b and returns what
// follows it.
func checkDoc(b []byte, depth int) ([]byte, error) {
	if depth > MaxNestingDepth {
		return nil, errTooDeep
	}
	if len(b) < 5 {
		return nil, errShort
	}
	n := int64(int32(binary.LittleEndian.Uint32(b)))
	if n < 5 || n > int64(len(b)) {
		return nil, fmt.Errorf("document length %d is invalid (%d bytes available)", n, len(b))
	}
	if b[n-1] != 0 {
		return nil, errors.New("document is not NUL-terminated")
	}
	elems := b[4 : n-1]
	for len(elems) > 0 {
		t := elems[0]
		nul := bytes.IndexByte(elems[1:], 0)
		if nul < 0 {
			return nil, errNoCStr
		}
		var err error
		if elems, err = checkValue(t, elems[2+nul:], depth); err != nil {
			return nil, err
		}
	}
	return b[n:], nil
}

// checkValue validates one value of type t at the start of b.
func checkValue(t byte, b []byte, depth int) ([]byte, error) {
	switch t {
	case 0x06, 0x0A, 0x7F, 0xFF: // undefined, null, maxKey, minKey
		return b, nil
	case 0x08:
		if len(b) < 1 {
			return nil, errShort
		}
		if b[0] > 1 {
			return nil, errBadBool
		}
		return b[1:], nil
	case 0x10:
		return skip(b, 4)
	case 0x01, 0x09, 0x11, 0x12: // double, datetime, timestamp, int64
		return skip(b, 8)
	case 0x07:
		return skip(b, 12)
	case 0x13:
		return skip(b, 16)
	case 0x02, 0x0D, 0x0E: // string, JavaScript, symbol
		return checkString(b)
	case 0x03, 0x04:
		return checkDoc(b, depth+1)
	case 0x05:
		return checkBinary(b)
	case 0x0B: // regex: pattern and options C strings
		rest, err := checkCString(b)
		if err != nil {
			return nil, err
		}
		return checkCString(rest)
	case 0x0C: // DBPointer: string and ObjectId
		rest, err := checkString(b)
		if err != nil {
			return nil, err
		}
		return skip(rest, 12)
	case 0x0F:
		return checkCodeWithScope(b, depth)
	}
	return nil, fmt.Errorf("unknown element type 0x%02x", t)
}

func skip(b []byte, n int) ([]byte, error) {
	if len(b) < n {
		return nil, errShort
	}
	return b[n:], nil
}

func checkCString(b []byte) ([]byte, error) {
	nul := bytes.IndexByte(b, 0)
	if nul < 0 {
		return nil, errNoCStr
	}
	return b[nul+1:], nil
}

func checkString(b []byte) ([]byte, error) {
	if len(b) < 4 {
		return nil, errShort
	}
	n := int64(int32(binary.LittleEndian.Uint32(b)))
	if n < 1 || n > int64(len(b)-4) || b[4+n-1] != 0 {
		return nil, errBadStr
	}
	return b[4+n:], nil
}

func checkBinary(b []byte) ([]byte, error) {
	if len(b) < 5 {
		return nil, errShort
	}
	n := int64(int32(binary.LittleEndian.Uint32(b)))
	if n < 0 || n > int64(len(b)-5) {
		return nil, fmt.Errorf("binary length %d is invalid", n)
	}
	if b[4] == 0x02 { // old binary: an inner length that must agree
		if n < 4 || int64(int32(binary.LittleEndian.Uint32(b[5:]))) != n-4 {
			return nil, errors.New("malformed old binary (subtype 2) value")
		}
	}
	return b[5+n:], nil
}

func checkCodeWithScope(b []byte, depth int) ([]byte, error) {
	if len(b) < 4 {
		return nil, errShort
	}
	n := int64(int32(binary.LittleEndian.Uint32(b)))
	if n < 4+5+5 || n > int64(len(b)) {
		return nil, errBadScope
	}
	body := b[4:n]
	rest, err := checkString(body)
	if err != nil {
		return nil, err
	}
	if rest, err = checkDoc(rest, depth+1); err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, errBadScope
	}
	return b[n:], nil
}
