package shardkey

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// Seed is the seed mongod hashes shard keys and hashed indexes with
// (BSONElementHasher::DEFAULT_HASH_SEED).
const Seed = 0

// eoo is the canonical type written for the end of a document: mongod's
// hasher hashes the terminating EOO element, whose canonical type is 0.
const eoo int32 = 0

// Hash returns mongod's hash64 of v with seed 0: what a hashed shard key
// or hashed index stores for v, and what convertShardKeyToHashed(v)
// answers. v is a value as the driver's bson package decodes it (bson.D,
// bson.A, int32, int64, float64, string, bson.Binary, ...).
func Hash(v any) (int64, error) {
	return HashSeed(v, Seed)
}

// HashSeed is Hash with another seed: MD5 over the seed (int32 little
// endian) and the value's canonical encoding; the first 8 digest bytes,
// little endian, are the result.
func HashSeed(v any, seed int32) (int64, error) {
	var stack [64]byte
	buf := binary.LittleEndian.AppendUint32(stack[:0], uint32(seed))
	buf = appendInt32(buf, int32(bsonutil.Rank(v)))
	var err error
	switch v.(type) {
	case bson.D, bson.Raw, bson.A, []any, bson.CodeWithScope:
		// Containers recurse, and the recursion moves its buffer to the
		// heap; leaves, the usual shard key, hash without allocating.
		buf, err = appendBody(slices.Clone(buf), v)
	default:
		buf, err = appendLeaf(buf, v)
	}
	if err != nil {
		return 0, err
	}
	sum := md5.Sum(buf)
	return int64(binary.LittleEndian.Uint64(sum[:8])), nil
}

// appendElement appends a nested element: canonical type, name with its
// NUL, then the value.
func appendElement(buf []byte, name string, v any) ([]byte, error) {
	buf = appendInt32(buf, int32(bsonutil.Rank(v)))
	buf = append(append(buf, name...), 0)
	return appendBody(buf, v)
}

// appendBody appends what follows the canonical type (and name):
// documents and arrays element by element, other values as appendLeaf
// does.
func appendBody(buf []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case bson.D:
		return appendDocument(buf, x)
	case bson.Raw:
		d, err := rawToD(x)
		if err != nil {
			return nil, err
		}
		return appendDocument(buf, d)
	case bson.A:
		return appendArray(buf, x)
	case []any:
		return appendArray(buf, x)
	case bson.CodeWithScope:
		return appendCodeWithScope(buf, x)
	}
	return appendLeaf(buf, v)
}

// appendLeaf appends a value that holds no elements: a number squashed
// to int64, anything else as its BSON value bytes. It is not recursive,
// so a caller's stack buffer stays on the stack.
func appendLeaf(buf []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case int32:
		return appendInt64(buf, int64(x)), nil
	case int64:
		return appendInt64(buf, x), nil
	case int:
		return appendInt64(buf, int64(x)), nil
	case float64:
		return appendInt64(buf, doubleForHash(x)), nil
	case bson.Decimal128:
		return appendInt64(buf, decimalForHash(x)), nil
	}
	return appendScalar(buf, v)
}

// appendScalar appends the BSON value bytes of a type that holds no
// elements; MinKey, MaxKey, null and undefined have none. A Go type that
// is no BSON value is an error.
func appendScalar(buf []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return appendString(buf, x), nil
	case bson.Symbol:
		return appendString(buf, string(x)), nil
	case bson.JavaScript:
		return appendString(buf, string(x)), nil
	case bson.Binary:
		return appendBinary(buf, x), nil
	case bson.ObjectID:
		return append(buf, x[:]...), nil
	case bool:
		if x {
			return append(buf, 1), nil
		}
		return append(buf, 0), nil
	case bson.DateTime:
		return appendInt64(buf, int64(x)), nil
	case bson.Timestamp:
		return binary.LittleEndian.AppendUint64(buf, uint64(x.T)<<32|uint64(x.I)), nil
	case bson.Regex:
		buf = append(append(buf, x.Pattern...), 0)
		return append(append(buf, x.Options...), 0), nil
	case bson.DBPointer:
		return append(appendString(buf, x.DB), x.Pointer[:]...), nil
	case nil, bson.Null, bson.Undefined, bson.MinKey, bson.MaxKey:
		return buf, nil
	}
	return nil, fmt.Errorf("shardkey: cannot hash a value of Go type %T", v)
}

// appendDocument appends each element with its name, then the EOO
// terminator (canonical type 0, no name, no value).
func appendDocument(buf []byte, d bson.D) ([]byte, error) {
	var err error
	for _, e := range d {
		if buf, err = appendElement(buf, e.Key, e.Value); err != nil {
			return nil, err
		}
	}
	return appendInt32(buf, eoo), nil
}

// appendArray hashes an array as the document {"0": ..., "1": ...} it is
// stored as.
func appendArray(buf []byte, a []any) ([]byte, error) {
	var err error
	var name [20]byte
	for i, v := range a {
		if buf, err = appendElement(buf, string(fmt.Appendf(name[:0], "%d", i)), v); err != nil {
			return nil, err
		}
	}
	return appendInt32(buf, eoo), nil
}

// appendCodeWithScope appends the code's bytes and NUL (without their
// length prefix, as mongod's hasher reads them), then the scope's elements.
func appendCodeWithScope(buf []byte, c bson.CodeWithScope) ([]byte, error) {
	buf = append(append(buf, c.Code...), 0)
	switch c.Scope.(type) {
	case nil:
		return appendDocument(buf, nil)
	case bson.D, bson.Raw:
		return appendBody(buf, c.Scope)
	}
	return nil, fmt.Errorf("shardkey: cannot hash a code-with-scope whose scope is a %T", c.Scope)
}

func rawToD(raw bson.Raw) (bson.D, error) {
	var d bson.D
	if err := bson.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("shardkey: decode embedded document: %w", err)
	}
	return d, nil
}

// appendString appends a BSON string: int32 length counting the NUL, the
// bytes, the NUL.
func appendString(buf []byte, s string) []byte {
	buf = appendInt32(buf, int32(len(s)+1))
	return append(append(buf, s...), 0)
}

// appendBinary appends a BSON binary value. Subtype 2 (the old binary)
// carries its own inner length, as the driver writes it.
func appendBinary(buf []byte, b bson.Binary) []byte {
	if b.Subtype == bson.TypeBinaryBinaryOld {
		buf = appendInt32(buf, int32(len(b.Data)+4))
		buf = append(buf, b.Subtype)
		buf = appendInt32(buf, int32(len(b.Data)))
		return append(buf, b.Data...)
	}
	buf = appendInt32(buf, int32(len(b.Data)))
	buf = append(buf, b.Subtype)
	return append(buf, b.Data...)
}

func appendInt32(buf []byte, v int32) []byte {
	return binary.LittleEndian.AppendUint32(buf, uint32(v))
}

func appendInt64(buf []byte, v int64) []byte {
	return binary.LittleEndian.AppendUint64(buf, uint64(v))
}

// doubleForHash is mongod's safeNumberLongForHash for a double: the
// fraction truncated, NaN as 0, out-of-range values clamped, and 2^63
// itself as -2^63 (the wrap older servers produced, kept for
// compatibility of existing hashed data).
func doubleForHash(d float64) int64 {
	switch {
	case d == 0x1p63:
		return math.MinInt64
	case math.IsNaN(d):
		return 0
	case !(d < 0x1p63):
		return math.MaxInt64
	case d < -0x1p63:
		return math.MinInt64
	}
	return int64(d)
}

// decimalForHash is safeNumberLongForHash for a Decimal128: NaN as 0,
// clamped to int64, otherwise Decimal128::toLong's default rounding (half
// to even) — unlike a double, 42.5 becomes 42 and 43.5 becomes 44.
func decimalForHash(d bson.Decimal128) int64 {
	if d.IsNaN() {
		return 0
	}
	switch d.IsInf() {
	case 1:
		return math.MaxInt64
	case -1:
		return math.MinInt64
	}
	coef, exp, err := d.BigInt()
	if err != nil {
		return 0 // unreachable: NaN and infinities are handled above
	}
	n := roundHalfEven(coef, exp)
	switch {
	case n.IsInt64():
		return n.Int64()
	case n.Sign() > 0:
		return math.MaxInt64
	}
	return math.MinInt64
}

// roundHalfEven returns coef × 10^exp rounded to an integer, ties to even.
func roundHalfEven(coef *big.Int, exp int) *big.Int {
	ten := big.NewInt(10)
	if exp >= 0 {
		if exp > 40 && coef.Sign() != 0 { // far beyond int64 either way
			return new(big.Int).Mul(coef, new(big.Int).Exp(ten, big.NewInt(40), nil))
		}
		return new(big.Int).Mul(coef, new(big.Int).Exp(ten, big.NewInt(int64(exp)), nil))
	}
	if -exp > len(coef.String())+1 { // |value| < 0.1
		return new(big.Int)
	}
	div := new(big.Int).Exp(ten, big.NewInt(int64(-exp)), nil)
	q, r := new(big.Int).QuoRem(coef, div, new(big.Int))
	twice := new(big.Int).Abs(r)
	twice.Lsh(twice, 1)
	switch c := twice.Cmp(div); {
	case c > 0, c == 0 && q.Bit(0) == 1:
		if coef.Sign() < 0 {
			return q.Sub(q, big.NewInt(1))
		}
		return q.Add(q, big.NewInt(1))
	}
	return q
}
