package touchrepair

import (
	"encoding/binary"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// entryKey is a test index's key: the prefix, the date (inverted when
// desc) and the _id.
func entryKey(desc bool, date int64, id string) []byte {
	d := uint64(date)
	if desc {
		d = ^d
	}
	return append(binary.BigEndian.AppendUint64([]byte("i"), d), id...)
}

func testIndex(desc bool) Index {
	return Index{
		Prefix: []byte("i"), End: []byte("j"), Field: "t", Desc: desc,
		Date: func(key []byte) (int64, bool) {
			if len(key) < 9 {
				return 0, false
			}
			d := binary.BigEndian.Uint64(key[1:9])
			if desc {
				d = ^d
			}
			return int64(d), true
		},
		DocKey: func(id []byte) []byte { return append([]byte("d"), id...) },
	}
}

func doc(t *testing.T, date int64) []byte {
	t.Helper()
	raw, err := bson.Marshal(bson.D{{Key: "a", Value: "x"}, {Key: "t", Value: bson.DateTime(date)}, {Key: "z", Value: int32(1)}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestRun: a document's date moves to its newest entry's when that
// entry logs a touch and is later, in indexes of either order; an older
// logging entry, a later entry that does not log, a document gone, and
// a field that is not a date change nothing.
func TestRun(t *testing.T) {
	for _, desc := range []bool{false, true} {
		eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		b := eng.NewBatch()
		put := func(k, v []byte) {
			if err := b.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		entry := func(id string, date int64, logs bool) {
			put(entryKey(desc, date, id), ttlentry.AppendLoose(nil, []byte(id), nil, logs))
		}
		// "\x20a": touched twice behind; the newest entry (300) logs.
		put([]byte("d\x20a"), doc(t, 100))
		entry("\x20a", 100, false)
		entry("\x20a", 200, true)
		entry("\x20a", 300, true)
		// "\x20b": a logging touch, then a later write that does not log.
		put([]byte("d\x20b"), doc(t, 400))
		entry("\x20b", 350, true)
		entry("\x20b", 400, false)
		// "\x20c": its document is gone.
		entry("\x20c", 500, true)
		// "\x20d": storage already holds the logged date.
		put([]byte("d\x20d"), doc(t, 600))
		entry("\x20d", 600, true)
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		err = Run(eng, []Index{testIndex(desc)}, func(key, value []byte) error {
			got[string(key)] = int64(bson.Raw(value).Lookup("t").DateTime())
			if bson.Raw(value).Lookup("z").Int32() != 1 || bson.Raw(value).Lookup("a").StringValue() != "x" {
				t.Errorf("the repair changed more than the date: %v", bson.Raw(value))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got["d\x20a"] != 300 {
			t.Fatalf("desc %v: repaired %v; want only d a at 300", desc, got)
		}
	}
}
