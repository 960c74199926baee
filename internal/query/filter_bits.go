package query

import (
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// bitsKind is one of the four bitwise query operators.
type bitsKind int

const (
	bitsAllSet bitsKind = iota
	bitsAllClear
	bitsAnySet
	bitsAnyClear
)

var bitsKinds = map[string]bitsKind{
	"$bitsAllSet": bitsAllSet, "$bitsAllClear": bitsAllClear,
	"$bitsAnySet": bitsAnySet, "$bitsAnyClear": bitsAnyClear,
}

// bitsOp tests bit positions of integers (two's complement, so positions
// past 63 read the sign) and of BinData (little-endian bytes, positions
// past the end read 0). Non-integral or out-of-range doubles never match.
type bitsOp struct {
	kind      bitsKind
	positions []uint32
}

func (o *bitsOp) atPath(doc bson.D, path []string, c *matchCtx) bool {
	return leafAt(doc, path, true, c, o)
}

func (o *bitsOp) single(v any, _ *matchCtx) bool {
	if b, ok := v.(bson.Binary); ok {
		return o.test(func(p uint32) bool { return binaryBit(b.Data, p) })
	}
	n, exact, ok := numberToInt64(v)
	if !ok || !exact {
		return false
	}
	return o.test(func(p uint32) bool { return p >= 63 && n < 0 || p < 63 && n&(1<<p) != 0 })
}

func binaryBit(data []byte, p uint32) bool {
	i := int(p / 8)
	return i < len(data) && data[i]&(1<<(p%8)) != 0
}

// test applies the operator's quantifier to the bits at its positions.
func (o *bitsOp) test(bit func(uint32) bool) bool {
	want := o.kind == bitsAllSet || o.kind == bitsAnySet
	all := o.kind == bitsAllSet || o.kind == bitsAllClear
	for _, p := range o.positions {
		if bit(p) != want && all {
			return false
		}
		if bit(p) == want && !all {
			return true
		}
	}
	return all
}

func parseBits(a opArgs) (fieldOp, error) {
	op := &bitsOp{kind: bitsKinds[a.e.Key]}
	switch v := a.e.Value.(type) {
	case bson.A, []any:
		return op, op.addPositions(v)
	case bson.Binary:
		op.addMask(v.Data)
		return op, nil
	}
	if !bsonutil.IsNumber(a.e.Value) {
		return nil, mongoerr.Newf(mongoerr.BadValue, "%s takes an Array, a number, or a BinData but received: %s",
			a.name, bsonutil.FormatElem(a.e.Key, a.e.Value))
	}
	mask, err := parseInteger(a.e.Key, a.e.Value)
	if err != nil {
		return nil, err
	}
	if mask < 0 {
		return nil, mongoerr.Newf(mongoerr.FailedToParse, "Expected a non-negative number in: %s",
			bsonutil.FormatElem(a.e.Key, a.e.Value))
	}
	for p := uint32(0); p < 63; p++ {
		if mask&(1<<p) != 0 {
			op.positions = append(op.positions, p)
		}
	}
	return op, nil
}

func (o *bitsOp) addPositions(v any) error {
	for i, p := range asArrayOrEmpty(v) {
		key := strconv.Itoa(i)
		n, err := parseInteger(key, p)
		switch {
		case err != nil:
		case n > math.MaxInt32 || n < math.MinInt32:
			err = mongoerr.Newf(mongoerr.FailedToParse, "Cannot represent %s in an int", bsonutil.FormatElem(key, p))
		case n < 0:
			err = mongoerr.Newf(mongoerr.FailedToParse, "Expected a non-negative number in: %s", bsonutil.FormatElem(key, p))
		}
		if err != nil {
			return mongoerr.New(mongoerr.BadValue, "Failed to parse bit position. "+err.Msg)
		}
		o.positions = append(o.positions, uint32(n))
	}
	return nil
}

func (o *bitsOp) addMask(data []byte) {
	for i, b := range data {
		for j := uint32(0); j < 8; j++ {
			if b&(1<<j) != 0 {
				o.positions = append(o.positions, uint32(i)*8+j)
			}
		}
	}
}

func asArrayOrEmpty(v any) bson.A {
	a, _ := asArray(v)
	return a
}
