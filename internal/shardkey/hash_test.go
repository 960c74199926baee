package shardkey

import (
	"crypto/md5"
	"encoding/binary"
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// hashVector is one published hash64 value. Unless a row says otherwise
// the expected values are mongod's own: src/mongo/db/hasher_test.cpp
// (BSONElementHasher tests, "determined experimentally"), the startup
// self-test in hasher.cpp ({check: 42}), and the $toHashedIndexKey page of
// the MongoDB manual ("string to hash").
type hashVector struct {
	name  string
	value any
	want  int64
}

func oid(t *testing.T, hex string) bson.ObjectID {
	t.Helper()
	id, err := bson.ObjectIDFromHex(hex)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func dec(t *testing.T, s string) bson.Decimal128 {
	t.Helper()
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Hashes of int64 values that several rows share.
const (
	hashOf0      = 4854801880128277513
	hashOf1      = 5902408780260971510
	hashOfMinus1 = 1140205862565771219
	hashOf42     = -944302157085130861
	hashOfMax64  = 921523596458303250
	hashOfMin64  = 4532067210535695462
)

func mongodVectors(t *testing.T) []hashVector {
	code := bson.JavaScript("func f() { return 1; }")
	ref := oid(t, "010203040506070809101112")
	return []hashVector{
		{"int32 42", int32(42), hashOf42},
		{"double 42.123", 42.123, hashOf42},
		{"int64 42", int64(42), hashOf42},
		{"int32 0", int32(0), hashOf0},
		{"double 0.456", 0.456, hashOf0},
		{"int64 0", int64(0), hashOf0},
		{"NaN", math.NaN(), hashOf0},
		{"int32 1", int32(1), hashOf1},
		{"double 1.987", 1.987, hashOf1},
		{"int64 1", int64(1), hashOf1},
		{"int32 -1", int32(-1), hashOfMinus1},
		{"double -1.789", -1.789, hashOfMinus1},
		{"int64 -1", int64(-1), hashOfMinus1},
		{"int32 min", int32(math.MinInt32), 6165898260261354870},
		{"double int32 min", float64(math.MinInt32), 6165898260261354870},
		{"int64 int32 min", int64(math.MinInt32), 6165898260261354870},
		{"int32 max", int32(math.MaxInt32), 1143184177162245883},
		{"double int32 max", float64(math.MaxInt32), 1143184177162245883},
		{"int64 int32 max", int64(math.MaxInt32), 1143184177162245883},
		{"double max", math.MaxFloat64, hashOfMax64},
		{"int64 max", int64(math.MaxInt64), hashOfMax64},
		{"double lowest", -math.MaxFloat64, hashOfMin64},
		{"int64 min", int64(math.MinInt64), hashOfMin64},
		{"MinKey", bson.MinKey{}, 7961148599568647290},
		{"MaxKey", bson.MaxKey{}, 5504842513779440750},
		{"undefined", bson.Undefined{}, 40158834000849533},
		{"null", nil, 2338878944348059895},
		{"bson.Null", bson.Null{}, 2338878944348059895},
		{"string abc", "abc", 8478485326885698097},
		{"symbol abc", bson.Symbol("abc"), 8478485326885698097},
		{"empty string", "", 2049396243249673340},
		{"empty symbol", bson.Symbol(""), 2049396243249673340},
		{"string to hash", "string to hash", 763543691661428748},
		{"object", bson.D{{Key: "a", Value: "abc"}, {Key: "b", Value: int64(123)}}, 4771603801758380216},
		{"empty object", bson.D{}, 7980500913326740417},
		{"array", bson.A{"bar", "baz", "qux"}, -2938911267422831539},
		{"empty array", bson.A{}, 8849948234993459283},
		{"binary general", bson.Binary{Subtype: 0, Data: []byte{0, 1, 2, 3, 4, 6}}, 7252465090394235301},
		{"binary custom", bson.Binary{Subtype: 0x80, Data: []byte{0, 1, 2, 3, 4, 6}}, 5736670452907618262},
		{"binary uuid", bson.Binary{Subtype: 4, Data: []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}, 6084661258071355978},
		{"objectId", ref, -5588663249627035708},
		{"zero objectId", bson.ObjectID{}, -4293118519463489418},
		{"true", true, 6405873908747105701},
		{"false", false, 6289544573401934092},
		{"date", bson.DateTime(0x5566778811223344), 4476222765095560467},
		{"date 0", bson.DateTime(0), -1178696894582842035},
		{"regex", bson.Regex{Pattern: "mongodb"}, -7275792090268217043},
		{"regex with options", bson.Regex{Pattern: ".*", Options: "i"}, 7095855029187981886},
		{"dbPointer c", bson.DBPointer{DB: "c", Pointer: ref}, 940175826736461384},
		{"dbPointer db.c", bson.DBPointer{DB: "db.c", Pointer: ref}, 2426768198104018194},
		{"code", code, 6861638109178014270},
		{"code with scope", bson.CodeWithScope{Code: code, Scope: bson.D{{Key: "c", Value: true}}}, 501342939894575968},
	}
}

// derivedVectors are rows whose expected value is a published vector but
// whose mapping onto it comes from reading mongod's source
// (safeNumberLongForHash, Decimal128::toLong), not from a published test.
func derivedVectors(t *testing.T) []hashVector {
	return []hashVector{
		{"double 2^63 wraps to min", 0x1p63, hashOfMin64},
		{"double +Inf clamps", math.Inf(1), hashOfMax64},
		{"double -Inf clamps", math.Inf(-1), hashOfMin64},
		{"decimal 42", dec(t, "42"), hashOf42},
		{"decimal 42.5 rounds half to even", dec(t, "42.5"), hashOf42},
		{"decimal 0.9 rounds", dec(t, "0.9"), hashOf1},
		{"decimal 0.5 rounds half to even", dec(t, "0.5"), hashOf0},
		{"decimal -1.2", dec(t, "-1.2"), hashOfMinus1},
		{"decimal 1E-6000", dec(t, "1E-6000"), hashOf0},
		{"decimal NaN", dec(t, "NaN"), hashOf0},
		{"decimal 1E+400 clamps", dec(t, "1E+400"), hashOfMax64},
		{"decimal -Infinity clamps", dec(t, "-Infinity"), hashOfMin64},
	}
}

func TestHashMatchesMongod(t *testing.T) {
	for _, rows := range [][]hashVector{mongodVectors(t), derivedVectors(t)} {
		for _, r := range rows {
			got, err := Hash(r.value)
			if err != nil {
				t.Errorf("%s: %v", r.name, err)
				continue
			}
			if got != r.want {
				t.Errorf("%s: hash = %d, want %d", r.name, got, r.want)
			}
		}
	}
}

// TestHashCoversEveryBSONType: every BSON type the driver knows has a row
// with a published value, except Timestamp, which TestHashTimestamp
// covers; adding a type to the driver fails this test until it has one.
func TestHashCoversEveryBSONType(t *testing.T) {
	covered := map[bson.Type]bool{bson.TypeTimestamp: true}
	for _, rows := range [][]hashVector{mongodVectors(t), derivedVectors(t)} {
		for _, r := range rows {
			if r.value == nil {
				covered[bson.TypeNull] = true
				continue
			}
			typ, _, err := bson.MarshalValue(r.value)
			if err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
			covered[typ] = true
		}
	}
	for b := 0; b < 256; b++ {
		if typ := bson.Type(b); typ.IsValid() && !covered[typ] {
			t.Errorf("BSON type %s has no hash vector", typ)
		}
	}
}

// TestHashTimestamp: mongod's published vector for a Timestamp dates from
// servers where Timestamp and Date shared canonical type 45; today's
// bsontypes.h gives Timestamp 47. The value bytes are checked against the
// old vector with the old type, and the current type makes a Timestamp
// hash unlike the Date of the same bits.
func TestHashTimestamp(t *testing.T) {
	ts := bson.Timestamp{T: 0x55667788, I: 0x11223344}
	buf := binary.LittleEndian.AppendUint32(nil, Seed)
	buf = appendInt32(buf, bsonutil.RankDate)
	buf, err := appendScalar(buf, ts)
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum(buf)
	if got := int64(binary.LittleEndian.Uint64(sum[:8])); got != 4476222765095560467 {
		t.Fatalf("timestamp body under the old canonical type = %d, want mongod's 4476222765095560467", got)
	}
	tsHash, err := Hash(ts)
	if err != nil {
		t.Fatal(err)
	}
	dateHash, _ := Hash(bson.DateTime(0x5566778811223344))
	if tsHash == dateHash {
		t.Fatal("a Timestamp hashes like the Date of the same bits, as before canonical type 47")
	}
}

// TestHashSquashesNestedNumbers: numbers are squashed at every depth, as
// mongod's RecursiveSquashingIntsAndDoubles test requires, while arrays
// and documents of the same elements differ.
func TestHashSquashesNestedNumbers(t *testing.T) {
	a := bson.D{{Key: "a", Value: int32(3)}, {Key: "b", Value: bson.A{3.1, bson.D{{Key: "c", Value: int32(3)}}}}}
	b := bson.D{{Key: "a", Value: 3.1}, {Key: "b", Value: bson.A{int64(3), bson.D{{Key: "c", Value: 3.0}}}}}
	ha, _ := Hash(a)
	hb, _ := Hash(b)
	if ha != hb {
		t.Fatalf("nested numbers not squashed: %d vs %d", ha, hb)
	}
	asDoc, _ := Hash(bson.D{{Key: "0", Value: int32(0)}, {Key: "1", Value: int32(1)}})
	asArr, _ := Hash(bson.A{int32(0), int32(1)})
	if asDoc == asArr {
		t.Fatal("an array hashes like the document of its elements")
	}
	raw, _ := bson.Marshal(a)
	hr, err := Hash(bson.Raw(raw))
	if err != nil || hr != ha {
		t.Fatalf("bson.Raw hash = %d, %v; want %d", hr, err, ha)
	}
}

func TestHashSeedMatters(t *testing.T) {
	h0, _ := HashSeed(int32(4), 0)
	h1, _ := HashSeed(int32(4), 1)
	if h0 == h1 {
		t.Fatal("seed has no effect")
	}
}

func TestHashRefusesUnknownGoTypes(t *testing.T) {
	if _, err := Hash(struct{}{}); err == nil {
		t.Fatal("hashed a Go struct")
	}
	if _, err := Hash(bson.D{{Key: "a", Value: []string{"x"}}}); err == nil {
		t.Fatal("hashed a nested []string")
	}
}

func BenchmarkHash(b *testing.B) {
	id := bson.NewObjectID()
	for _, bc := range []struct {
		name  string
		value any
	}{{"int64", int64(123456789)}, {"objectId", id}, {"string16", "0123456789abcdef"}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Hash(bc.value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
