package diag

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

func openStore(t *testing.T) *docstore.Store {
	t.Helper()
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	store, err := docstore.Open(eng, docstore.Options{Clock: clock.NewManual(time.Unix(1_700_000_000, 0))})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func insertAll(t *testing.T, c *docstore.Collection, docs ...bson.D) {
	t.Helper()
	for _, d := range docs {
		doc, err := docstore.PrepareInsert(d)
		if err == nil {
			err = c.Insert(doc, docstore.WriteOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// dataSize's range counts the documents whose key is at or above min and
// below max, comparing values in order whatever the bounds' field names.
func TestKeyRangeMeasure(t *testing.T) {
	store := openStore(t)
	c, err := store.CreateCollection("db", "c", docstore.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		insertAll(t, c, bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(i % 5)}})
	}
	pattern := bson.D{{Key: "a", Value: 1}}
	cases := []struct {
		name     string
		min, max bson.D
		want     int64
	}{
		{"both bounds", bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "a", Value: 3}}, 4},
		{"min only", bson.D{{Key: "a", Value: 4}}, nil, 2},
		{"max only", nil, bson.D{{Key: "a", Value: 1}}, 2},
		{"other field names", bson.D{{Key: "x", Value: 2}}, bson.D{{Key: "y", Value: 3}}, 2},
		{"empty range", bson.D{{Key: "a", Value: 3}}, bson.D{{Key: "a", Value: 3}}, 0},
	}
	for _, tc := range cases {
		size, n, err := KeyRange{Pattern: pattern, Min: tc.min, Max: tc.max}.Measure(context.Background(), c)
		if err != nil || n != tc.want || (n > 0) != (size > 0) {
			t.Errorf("%s: size %d, n %d, err %v; want n %d", tc.name, size, n, err, tc.want)
		}
	}
}

// dbHash's hash of a collection follows its contents, and the database's
// follows the collections'.
func TestDBHashFollowsContents(t *testing.T) {
	store := openStore(t)
	c, err := store.CreateCollection("db", "c", docstore.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	insertAll(t, c, bson.D{{Key: "_id", Value: int32(1)}})
	before, err := DBHash(context.Background(), store, "db", []string{"c", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Collections) != 1 || len(before.UUIDs) != 1 || len(before.Capped) != 0 {
		t.Fatalf("hashes %+v", before)
	}
	again, _ := DBHash(context.Background(), store, "db", []string{"c"})
	insertAll(t, c, bson.D{{Key: "_id", Value: int32(2)}})
	after, _ := DBHash(context.Background(), store, "db", []string{"c"})
	if again.All != before.All || after.All == before.All || after.Collections[0].Value == before.Collections[0].Value {
		t.Fatalf("before %s, again %s, after %s", before.All, again.All, after.All)
	}
}

// os-release's fields are read with or without quotes.
func TestOSRelease(t *testing.T) {
	fields := osRelease("NAME=\"Debian GNU/Linux\"\nVERSION_ID='12'\n# comment\nID=debian\n")
	if fields["NAME"] != "Debian GNU/Linux" || fields["VERSION_ID"] != "12" || fields["ID"] != "debian" {
		t.Fatalf("osRelease = %v", fields)
	}
}

// The scans of dataSize and dbHash end with their context: a client's
// maxTimeMS, killOp or disconnect stops them (the loops are too fast for
// the interruption table to catch them running). Each is given a
// context that has ended, over a collection of 1,000 documents.
func TestScansStopWithTheirContext(t *testing.T) {
	store := openStore(t)
	c, err := store.CreateCollection("db", "c", docstore.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		insertAll(t, c, bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(i % 5)}})
	}
	scans := map[string]func(ctx context.Context) error{
		"dataSize": func(ctx context.Context) error {
			_, _, err := KeyRange{Pattern: bson.D{{Key: "a", Value: 1}}}.Measure(ctx, c)
			return err
		},
		"dbHash": func(ctx context.Context) error {
			_, err := DBHash(ctx, store, "db", []string{"c"})
			return err
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, scan := range scans {
		t.Run(name, func(t *testing.T) {
			if err := scan(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("%v, want the context's end", err)
			}
			if err := scan(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}
