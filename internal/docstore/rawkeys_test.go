package docstore

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Keys and expiry read from raw BSON must be exactly what the decoded
// document gives, or deleting by them would leave index entries behind.
func TestRawKeysAgreeWithEntryKeys(t *testing.T) {
	s, clk := openStore(t)
	c := indexedColl(t, s, "raw",
		bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 10}},
		bson.D{{Key: "key", Value: bson.D{{Key: "v", Value: -1}}}, {Key: "name", Value: "v_-1"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "v", Value: 1}, {Key: "t", Value: -1}}}, {Key: "name", Value: "v_t"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "w", Value: 1}}}, {Key: "name", Value: "w_sparse"}, {Key: "sparse", Value: true}},
		bson.D{{Key: "key", Value: bson.D{{Key: "e.k", Value: 1}}}, {Key: "name", Value: "dotted"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "v", Value: 1}}}, {Key: "name", Value: "partial"}, {Key: "partialFilterExpression", Value: bson.D{{Key: "w", Value: bson.D{{Key: "$exists", Value: true}}}}}},
	)
	now := clk.Now()
	values := []any{nil, "s", int32(7), int64(7), 7.5, true, date(now.Add(-time.Hour)), date(now.Add(time.Hour)),
		bson.NewObjectID(), bson.A{int32(1), "x"}, bson.A{}, bson.D{{Key: "k", Value: 1}}, bson.Regex{Pattern: "a"}, bson.MinKey{}}
	checked := 0
	for i, v := range values {
		for j, w := range values {
			doc := bson.D{{Key: "_id", Value: i*100 + j}, {Key: "t", Value: v}, {Key: "v", Value: w}}
			if j%3 == 0 {
				doc = append(doc, bson.E{Key: "w", Value: v})
			}
			raw, err := bson.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			decoded := &stored{raw: raw}
			if err := decoded.decode(); err != nil {
				t.Fatal(err)
			}
			st := c.state.Load()
			for _, ix := range st.indexes[1:] {
				want, err := ix.entryKeys(decoded.doc)
				if err != nil {
					continue // e.g. parallel arrays: rejected on write anyway
				}
				got, ok, err := ix.rawKeys(raw)
				if err != nil {
					t.Fatalf("%s on %v: %v", ix.def.Name, doc, err)
				}
				if !ok {
					continue
				}
				checked++
				if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) || (len(got) == 1 && !bytes.Equal(got[0], want[0])) {
					t.Errorf("%s on %v: raw keys %x, decoded %x", ix.def.Name, doc, got, want)
				}
			}
			expired, ok := c.rawExpired(raw, now)
			if ok && expired != c.Expired(decoded.doc, now) {
				t.Errorf("%v: raw expired %v, decoded %v", doc, expired, !expired)
			}
		}
	}
	if checked < 200 {
		t.Fatalf("only %d cases took the raw path", checked)
	}
}

// The scalar path of entryKeys (one field, a top-level scalar or nothing)
// must give the general walk's keys for a value of every BSON type, on
// every kind of single-field index; other indexes and values take the
// walk.
func TestScalarEntryKeysAgreeWithTheWalk(t *testing.T) {
	s, _ := openStore(t)
	c := indexedColl(t, s, "scalar",
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "asc"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "d", Value: -1}}}, {Key: "name", Value: "desc"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "s", Value: 1}}}, {Key: "name", Value: "sparse"}, {Key: "sparse", Value: true}},
		bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "ttl"}, {Key: "expireAfterSeconds", Value: 10}},
		bson.D{{Key: "key", Value: bson.D{{Key: "c", Value: 1}}}, {Key: "name", Value: "collated"},
			{Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}}},
		bson.D{{Key: "key", Value: bson.D{{Key: "h", Value: "hashed"}}}, {Key: "name", Value: "hashed"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "w", Value: 1}}}, {Key: "name", Value: "compound"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "e.k", Value: 1}}}, {Key: "name", Value: "dotted"}},
	)
	// One value per BSON type, arrays and documents included, and none.
	values := []any{
		bson.MinKey{}, bson.Undefined{}, nil, math.NaN(), int32(7), int64(7), 7.5, "Sx", "sx", bson.D{{Key: "k", Value: "x"}},
		bson.A{}, bson.A{"a", int32(1)}, bson.Binary{Data: []byte{1}}, bson.NewObjectID(), true,
		bson.DateTime(1700000000000), bson.Timestamp{T: 1}, bson.Regex{Pattern: "a"}, bson.DBPointer{DB: "d"},
		bson.JavaScript("f"), bson.Symbol("s"), bson.CodeWithScope{Code: "c"}, bson.Decimal128{}, bson.MaxKey{},
	}
	scalar := 0
	// One arena for every document, as a tx's for its writes: it fills,
	// overflows to allocated keys, and must never overwrite a key it gave.
	var arena keyArena
	type given struct {
		keys [][]byte
		want string
	}
	var gave []given
	for i, v := range append(values, absent{}) {
		doc := bson.D{{Key: "_id", Value: i}, {Key: "w", Value: int32(i)}}
		if _, none := v.(absent); !none {
			for _, f := range []string{"a", "d", "s", "t", "c", "h"} {
				doc = append(doc, bson.E{Key: f, Value: v})
			}
			doc = append(doc, bson.E{Key: "e", Value: bson.D{{Key: "k", Value: v}}})
		}
		for _, ix := range c.state.Load().indexes[1:] {
			want, wantErr := ix.combinedEntryKeys(doc)
			got, gotErr := ix.entryKeys(doc)
			if (wantErr == nil) != (gotErr == nil) || fmt.Sprintf("%x", got) != fmt.Sprintf("%x", want) {
				t.Errorf("%s on %v: keys %x (%v), the walk's %x (%v)", ix.def.Name, doc, got, gotErr, want, wantErr)
			}
			if _, _, ok := ix.scalarEntryKey(doc); ok {
				scalar++
			}
			fromArena, arenaErr := arena.entryKeys(ix, doc)
			if (wantErr == nil) != (arenaErr == nil) || fmt.Sprintf("%x", fromArena) != fmt.Sprintf("%x", want) {
				t.Errorf("%s on %v: arena keys %x (%v), the walk's %x (%v)", ix.def.Name, doc, fromArena, arenaErr, want, wantErr)
			}
			gave = append(gave, given{fromArena, fmt.Sprintf("%x", want)})
		}
	}
	if arena.used == 0 || arena.nlists != len(arena.lists) {
		t.Fatalf("the arena held %d bytes and %d lists: the table no longer fills it", arena.used, arena.nlists)
	}
	for _, g := range gave {
		if got := fmt.Sprintf("%x", g.keys); got != g.want {
			t.Fatalf("a key the arena gave changed to %s, want %s", got, g.want)
		}
	}
	// asc, desc, sparse, ttl and collated take the scalar path for every
	// value but the two arrays.
	if want := 5 * (len(values) + 1 - 2); scalar != want {
		t.Fatalf("%d cases took the scalar path, want %d", scalar, want)
	}
}

// absent marks a test document without the indexed field.
type absent struct{}

// A TTL index's expiry read from raw BSON (the monitor's read of a
// document whose event carries it) must be what the decoded document
// gives, for a value of every BSON type on every kind of TTL index; where
// it cannot tell, it says so and the document is decoded.
func TestRawExpiresAtAgreesWithTheDecodedDocument(t *testing.T) {
	s, _ := openStore(t)
	c := indexedColl(t, s, "rawttl",
		bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "plain"}, {Key: "expireAfterSeconds", Value: 10}},
		bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "partial"}, {Key: "expireAfterSeconds", Value: 0},
			{Key: "partialFilterExpression", Value: bson.D{{Key: "w", Value: bson.D{{Key: "$exists", Value: true}}}}}},
		bson.D{{Key: "key", Value: bson.D{{Key: "e.k", Value: 1}}}, {Key: "name", Value: "dotted"}, {Key: "expireAfterSeconds", Value: 5}},
	)
	values := []any{
		bson.MinKey{}, bson.Undefined{}, nil, math.NaN(), int32(7), int64(7), 7.5, "sx", bson.D{{Key: "k", Value: bson.DateTime(1)}},
		bson.A{}, bson.A{bson.DateTime(9), bson.DateTime(3)}, bson.Binary{Data: []byte{1}}, bson.NewObjectID(), true,
		bson.DateTime(1700000000000), bson.Timestamp{T: 1}, bson.Regex{Pattern: "a"}, bson.DBPointer{DB: "d"},
		bson.JavaScript("f"), bson.Symbol("s"), bson.CodeWithScope{Code: "c", Scope: bson.D{}}, bson.Decimal128{}, bson.MaxKey{},
	}
	ttl := c.state.Load().ttl
	if len(ttl) != 3 {
		t.Fatalf("%d TTL indexes, want 3", len(ttl))
	}
	raws := 0
	for i, v := range append(values, absent{}) {
		doc := bson.D{{Key: "_id", Value: i}}
		if _, none := v.(absent); !none {
			doc = append(doc, bson.E{Key: "t", Value: v}, bson.E{Key: "u", Value: v}, bson.E{Key: "e", Value: bson.D{{Key: "k", Value: v}}})
			if i%2 == 0 {
				doc = append(doc, bson.E{Key: "w", Value: 1})
			}
		}
		raw, err := bson.Marshal(doc)
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		for _, ix := range ttl {
			wantAt, wantFound := ix.expiresAt(doc)
			at, found, ok := ix.rawExpiresAt(raw)
			if ok {
				raws++
				if found != wantFound || !at.Equal(wantAt) {
					t.Errorf("%s on %v: raw %v %v, decoded %v %v", ix.def.Name, doc, at, found, wantAt, wantFound)
				}
			}
			d := &stored{raw: raw}
			at, found, err := d.expiresAt(ix)
			if err != nil || found != wantFound || !at.Equal(wantAt) {
				t.Errorf("%s on %v: stored %v %v (%v), decoded %v %v", ix.def.Name, doc, at, found, err, wantAt, wantFound)
			}
		}
	}
	// The plain index reads every value but the document and the two
	// arrays from the raw BSON, and values the fast decoder leaves to the
	// reflective one; the partial and dotted indexes never do.
	if raws < len(values)-8 || raws > len(values)-2 {
		t.Fatalf("%d of %d values took the raw path on the plain index", raws, len(values)+1)
	}
}
