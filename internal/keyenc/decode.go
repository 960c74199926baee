package keyenc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// ErrCorrupt is wrapped by every decoding error.
var ErrCorrupt = errors.New("keyenc: corrupt encoding")

// maxDepth bounds nesting when decoding untrusted bytes; MongoDB itself
// limits documents to 100 levels.
const maxDepth = 200

// DecodeValue decodes one ascending value from the front of src and returns
// it with the remaining bytes.
//
// Decoding preserves value, not type: numbers come back as int64 when
// integral and in range, else float64 when exactly representable, else
// bson.Decimal128 (NaN and ±Inf as float64); symbols as string; null as nil;
// code-with-scope without its scope (the encoding does not carry it).
func DecodeValue(src []byte) (any, []byte, error) {
	d := decoder{src: src}
	v, err := d.value()
	if err != nil {
		return nil, nil, err
	}
	return v, d.src[d.pos:], nil
}

// DecodeValueDesc decodes one descending value from the front of src.
func DecodeValueDesc(src []byte) (any, []byte, error) {
	d := decoder{src: src, inv: 0xFF}
	v, err := d.value()
	if err != nil {
		return nil, nil, err
	}
	return v, d.src[d.pos:], nil
}

// DecodeDate decodes a BSON date at the start of src, inverted when desc
// (a descending index's key), without DecodeValue's allocation: it is the
// TTL monitor's hot path. ok is false when src does not start with a date.
func DecodeDate(src []byte, desc bool) (d bson.DateTime, ok bool) {
	var inv byte
	if desc {
		inv = 0xFF
	}
	if len(src) < 9 || src[0]^inv != tagDate {
		return 0, false
	}
	u := binary.BigEndian.Uint64(src[1:9])
	if desc {
		u = ^u
	}
	return bson.DateTime(int64(u ^ 1<<63)), true
}

// decoder reads an encoding; inv is XORed into every byte read, which undoes
// descending inversion (and, flipped again, a negative number's magnitude).
type decoder struct {
	src   []byte
	pos   int
	inv   byte
	depth int
}

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d", ErrCorrupt, fmt.Sprintf(format, args...), d.pos)
}

func (d *decoder) next() (byte, error) {
	if d.pos >= len(d.src) {
		return 0, d.errorf("truncated")
	}
	b := d.src[d.pos] ^ d.inv
	d.pos++
	return b, nil
}

// take returns the next n bytes, un-inverted, in a fresh slice.
func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || len(d.src)-d.pos < n {
		return nil, d.errorf("truncated")
	}
	out := make([]byte, n)
	for i := range out {
		out[i] = d.src[d.pos+i] ^ d.inv
	}
	d.pos += n
	return out, nil
}

// read fills dst with the next len(dst) bytes, un-inverted: take without
// its fresh slice, for fixed-size fields the caller holds in an array.
func (d *decoder) read(dst []byte) error {
	if len(d.src)-d.pos < len(dst) {
		return d.errorf("truncated")
	}
	for i := range dst {
		dst[i] = d.src[d.pos+i] ^ d.inv
	}
	d.pos += len(dst)
	return nil
}

func (d *decoder) uint32() (uint32, error) {
	var b [4]byte
	if err := d.read(b[:]); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b[:]), nil
}

func (d *decoder) uint64() (uint64, error) {
	hi, err := d.uint32()
	if err != nil {
		return 0, err
	}
	lo, err := d.uint32()
	return uint64(hi)<<32 | uint64(lo), err
}

func (d *decoder) value() (any, error) {
	tag, err := d.next()
	if err != nil {
		return nil, err
	}
	switch tag {
	case tagMinKey:
		return bson.MinKey{}, nil
	case tagUndefined:
		return bson.Undefined{}, nil
	case tagNull:
		return nil, nil
	case tagNaN:
		return math.NaN(), nil
	case tagNegInf:
		return math.Inf(-1), nil
	case tagZero:
		return int64(0), nil
	case tagPosInf:
		return math.Inf(1), nil
	case tagNeg, tagPos:
		return d.number(tag == tagNeg)
	case tagString:
		return d.str()
	case tagObject, tagArray:
		return d.container(tag)
	case tagFalse, tagTrue:
		return tag == tagTrue, nil
	case tagMaxKey:
		return bson.MaxKey{}, nil
	}
	return d.fixed(tag)
}

// fixed decodes the types whose bodies are fixed fields and strings.
func (d *decoder) fixed(tag byte) (any, error) {
	switch tag {
	case tagBinary:
		return d.binary()
	case tagObjectID:
		var oid bson.ObjectID
		err := d.read(oid[:])
		return oid, err
	case tagDate:
		u, err := d.uint64()
		return bson.DateTime(int64(u ^ 1<<63)), err
	case tagTimestamp:
		u, err := d.uint64()
		return bson.Timestamp{T: uint32(u >> 32), I: uint32(u)}, err
	case tagRegex:
		return d.regex()
	case tagDBPointer:
		return d.dbPointer()
	case tagCode, tagCodeScope:
		s, err := d.str()
		if tag == tagCode {
			return bson.JavaScript(s), err
		}
		return bson.CodeWithScope{Code: bson.JavaScript(s)}, err
	}
	d.pos--
	return nil, d.errorf("unknown tag 0x%02x", tag)
}

func (d *decoder) binary() (any, error) {
	n, err := d.uint32()
	if err != nil {
		return nil, err
	}
	sub, err := d.next()
	if err != nil {
		return nil, err
	}
	data, err := d.take(int(n))
	return bson.Binary{Subtype: sub, Data: data}, err
}

func (d *decoder) regex() (any, error) {
	p, err := d.str()
	if err != nil {
		return nil, err
	}
	o, err := d.str()
	return bson.Regex{Pattern: p, Options: o}, err
}

func (d *decoder) dbPointer() (any, error) {
	db, err := d.str()
	if err != nil {
		return nil, err
	}
	var oid bson.ObjectID
	err = d.read(oid[:])
	return bson.DBPointer{DB: db, Pointer: oid}, err
}

// str undoes appendString's escaping up to the 0x00 0x01 terminator.
func (d *decoder) str() (string, error) {
	var out []byte
	for {
		b, err := d.next()
		if err != nil {
			return "", err
		}
		if b != 0x00 {
			out = append(out, b)
			continue
		}
		esc, err := d.next()
		switch {
		case err != nil:
			return "", err
		case esc == 0x01:
			return string(out), nil
		case esc == 0xFF:
			out = append(out, 0x00)
		default:
			return "", d.errorf("bad string escape 0x%02x", esc)
		}
	}
}

func (d *decoder) container(tag byte) (any, error) {
	if d.depth++; d.depth > maxDepth {
		return nil, d.errorf("nested too deeply")
	}
	defer func() { d.depth-- }()
	if tag == tagArray {
		return d.array()
	}
	return d.doc()
}

func (d *decoder) array() (any, error) {
	a := bson.A{}
	for {
		if d.pos < len(d.src) && d.src[d.pos]^d.inv == tagEnd {
			d.pos++
			return a, nil
		}
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
	}
}

func (d *decoder) doc() (any, error) {
	doc := bson.D{}
	for {
		rank, err := d.next()
		if err != nil {
			return nil, err
		}
		if rank == tagEnd {
			return doc, nil
		}
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		if rankTag(v) != rank {
			return nil, d.errorf("element %q: rank byte 0x%02x does not match its value", k, rank)
		}
		doc = append(doc, bson.E{Key: k, Value: v})
	}
}

// number decodes a magnitude; a negative one is stored inverted.
func (d *decoder) number(neg bool) (any, error) {
	saved := d.inv
	if neg {
		d.inv ^= 0xFF
	}
	m, err := d.mag()
	d.inv = saved
	if err != nil {
		return nil, err
	}
	if m.inexact {
		if !consistentTiebreak(m) {
			return nil, d.errorf("decimal tiebreak does not match its magnitude")
		}
		h, l := m.dec.GetBytes()
		if neg {
			h |= 1 << 63
		}
		return bson.NewDecimal128(h, l), nil
	}
	v, err := exactValue(neg, m)
	if err != nil {
		return nil, d.errorf("%v", err)
	}
	return v, nil
}

func (d *decoder) mag() (mag, error) {
	hi, err := d.next()
	if err != nil {
		return mag{}, err
	}
	lo, err := d.next()
	if err != nil {
		return mag{}, err
	}
	m := mag{exp: int(hi)<<8 | int(lo) - expBias}
	for i := range maxGroups {
		b, err := d.next()
		if err != nil {
			return mag{}, err
		}
		m.hi, m.lo = orGroup(m.hi, m.lo, uint64(b>>1), 128-7*(i+1))
		if b&1 == 0 {
			return m, nil
		}
	}
	m.inexact = true
	h, err := d.uint64()
	if err != nil {
		return mag{}, err
	}
	l, err := d.uint64()
	m.dec = bson.NewDecimal128(h, l)
	return m, err
}

// orGroup ORs the 7-bit group g into the 128-bit hi:lo at bit offset shift
// (counted from the least significant bit).
func orGroup(hi, lo, g uint64, shift int) (uint64, uint64) {
	switch {
	case shift >= 64:
		hi |= g << (shift - 64)
	case shift+7 > 64:
		hi |= g >> (64 - shift)
		lo |= g << shift
	default:
		lo |= g << shift
	}
	return hi, lo
}

// exactValue picks the canonical Go type for an exact magnitude: int64 when
// integral and in range, else float64 when representable, else Decimal128.
func exactValue(neg bool, m mag) (any, error) {
	nb := 0 // fraction bits in use
	if m.hi|m.lo != 0 {
		nb = 128 - trailingZeros128(m.hi, m.lo)
	}
	if v, ok := asInt64(neg, m, nb); ok {
		return v, nil
	}
	if v, ok := asFloat64(neg, m, nb); ok {
		return v, nil
	}
	return asDecimal(neg, m, nb)
}

func trailingZeros128(hi, lo uint64) int {
	if lo != 0 {
		return bits.TrailingZeros64(lo)
	}
	return 64 + bits.TrailingZeros64(hi)
}

func asInt64(neg bool, m mag, nb int) (int64, bool) {
	if m.exp < nb || m.exp > 63 || (m.exp == 63 && (!neg || nb > 0)) {
		return 0, false
	}
	u := (1<<63 | m.hi>>1) >> (63 - m.exp)
	if neg {
		return int64(-u), true // -2^63 wraps to MinInt64, as intended
	}
	return int64(u), true
}

func asFloat64(neg bool, m mag, nb int) (float64, bool) {
	if nb > 52 || m.exp > 1023 || m.exp-nb < -1074 {
		return 0, false
	}
	var b uint64
	if m.exp >= -1022 {
		b = uint64(m.exp+1023)<<52 | m.hi>>12
	} else {
		// Subnormal: the leading 1 becomes an explicit mantissa bit.
		b = (1<<52 | m.hi>>12) >> (-1022 - m.exp)
	}
	if neg {
		b |= 1 << 63
	}
	return math.Float64frombits(b), true
}

// asDecimal writes M × 2^k (M odd) as a normalized decimal. The limits on
// k hold for every exact Decimal128: its odd part 5^e·c' fits in 127 bits,
// so e <= 54, and its coefficient is below 2^113.
func asDecimal(neg bool, m mag, nb int) (any, error) {
	k := m.exp - nb
	if k > 54+113 || k < -48 {
		return nil, fmt.Errorf("number 2^%d not representable", m.exp)
	}
	M := new(big.Int).SetUint64(m.hi)
	M.Lsh(M, 64).Or(M, new(big.Int).SetUint64(m.lo))
	M.Rsh(M, uint(128-nb)).SetBit(M, nb, 1)
	exp := 0
	if k >= 0 {
		M.Lsh(M, uint(k))
	} else {
		// M is odd, so M·5^-k has no trailing decimal zeros to strip.
		M.Mul(M, new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(-k)), nil))
		exp = k
	}
	M, exp = stripZeros(M, exp)
	if M.Cmp(maxCoefficient()) > 0 {
		return nil, fmt.Errorf("number 2^%d not representable", m.exp)
	}
	d := decimalBits(M, exp)
	if neg {
		h, l := d.GetBytes()
		d = bson.NewDecimal128(h|1<<63, l)
	}
	return d, nil
}

func maxCoefficient() *big.Int {
	return new(big.Int).Sub(pow10(34), big.NewInt(1))
}

// consistentTiebreak checks the decimal carried after an inexact magnitude:
// it must be a canonical positive Decimal128 (coefficient at most 10^34-1)
// whose exact binary magnitude is the one stored, as the encoder writes it.
// Anything else is corrupt input, not a value to hand back.
func consistentTiebreak(m mag) bool {
	h, _ := m.dec.GetBytes()
	if h>>63 != 0 || m.dec.IsNaN() || m.dec.IsInf() != 0 {
		return false
	}
	coef, exp, err := m.dec.BigInt()
	if err != nil || coef.Sign() <= 0 || coef.Cmp(maxCoefficient()) > 0 {
		return false
	}
	want := decimalMag(coef, exp)
	return want.inexact && want.exp == m.exp && want.hi == m.hi && want.lo == m.lo && want.dec == m.dec
}
