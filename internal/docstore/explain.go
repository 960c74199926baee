package docstore

import (
	"encoding/hex"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/ixbounds"
)

// Num stores a counter as MongoDB does: an int when it fits, else a long.
func Num(n int64) any {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return int32(n)
	}
	return n
}

// BoundsDoc renders explain's indexBounds: for each field, its intervals
// in the order the scan meets them.
func (p *Plan) BoundsDoc() bson.D {
	out := bson.D{}
	for _, b := range p.bounds {
		out = append(out, bson.E{Key: b.path, Value: b.strings(b.desc != p.Reverse)})
	}
	return out
}

func (b fieldBounds) strings(backwards bool) bson.A {
	if b.full {
		if backwards {
			return bson.A{"[MaxKey, MinKey]"}
		}
		return bson.A{"[MinKey, MaxKey]"}
	}
	out := make(bson.A, 0, len(b.ivals))
	for i := range b.ivals {
		iv := b.ivals[i]
		if backwards {
			iv = b.ivals[len(b.ivals)-1-i]
		}
		out = append(out, intervalString(iv, backwards, b.keyed))
	}
	return out
}

// intervalString prints an interval as MongoDB does: "[5, 5]",
// "(3, inf.0]", and a collation key as "CollationKey(0x…)".
func intervalString(iv ixbounds.Interval, backwards, keyed bool) string {
	lo, loIncl, hi, hiIncl := iv.Lo, iv.LoIncl, iv.Hi, iv.HiIncl
	if backwards {
		lo, loIncl, hi, hiIncl = hi, hiIncl, lo, loIncl
	}
	open, closing := "(", ")"
	if loIncl {
		open = "["
	}
	if hiIncl {
		closing = "]"
	}
	return open + formatBound(lo, keyed) + ", " + formatBound(hi, keyed) + closing
}

func formatBound(v any, keyed bool) string {
	if s, ok := v.(string); ok && keyed {
		return "CollationKey(0x" + hex.EncodeToString([]byte(s)) + ")"
	}
	if keyed {
		v = bsonutil.HexStrings(v, "CollationKey(0x", ")")
	}
	return bsonutil.Format(v)
}
