package docstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/keyenc"
)

// validColl is a collection with every kind of index and documents that
// exercise them: arrays, missing fields, partial and sparse membership,
// and an expired TTL document that is not deleted yet.
func validColl(t *testing.T) *Collection {
	t.Helper()
	c, clk := ttlColl(t, "t", 60)
	mustIndex(t, c, ixSpec("tags_1_n_-1", bson.D{{Key: "tags", Value: 1}, {Key: "n", Value: -1}}))
	mustIndex(t, c, ixSpec("u_1", bson.D{{Key: "u", Value: 1}}, bson.E{Key: "unique", Value: true}, bson.E{Key: "sparse", Value: true}))
	mustIndex(t, c, ixSpec("p.q_1", bson.D{{Key: "p.q", Value: 1}}, bson.E{Key: "partialFilterExpression", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 2}}}}}))
	for i := 0; i < 6; i++ {
		insert(t, c, bson.D{
			{Key: "_id", Value: i}, {Key: "n", Value: i}, {Key: "tags", Value: bson.A{"x", i, bson.A{}}},
			{Key: "p", Value: bson.A{bson.D{{Key: "q", Value: i}}, bson.D{{Key: "q", Value: "z"}}}},
			{Key: "t", Value: date(t0.Add(time.Duration(i) * time.Minute))},
		})
	}
	insert(t, c, bson.D{{Key: "_id", Value: "u"}, {Key: "u", Value: "only"}})
	_, err := c.Modify(3, WriteOptions{}, func(doc bson.D) (Change, error) {
		return Change{Kind: Replace, Doc: bson.D{{Key: "_id", Value: 3}, {Key: "n", Value: 30}, {Key: "tags", Value: "solo"}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Modify(4, WriteOptions{}, func(bson.D) (Change, error) { return Change{Kind: Remove}, nil }); err != nil {
		t.Fatal(err)
	}
	clk.Advance(90 * time.Second) // _id 0 has expired and is still stored
	return c
}

func mustValidate(t *testing.T, c *Collection) *ValidateResult {
	t.Helper()
	res, err := c.Validate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestValidateCleanCollection(t *testing.T) {
	c := validColl(t)
	res := mustValidate(t, c)
	if !res.Valid() || res.Records != 6 || len(res.Warnings) != 0 {
		t.Fatalf("result %+v", res)
	}
	// tags: three keys for each of _id 0, 1, 2 and 5, one for the replaced
	// _id 3 and a null key for "u"; p.q: two keys for _id 5 and a null key
	// for _id 3, the others are outside the partial filter; t: every
	// document, "u" under null.
	want := map[string]int64{"_id_": 6, "t_1": 6, "tags_1_n_-1": 14, "u_1": 1, "p.q_1": 3}
	for _, ix := range res.Indexes {
		if !ix.Valid || ix.Keys != want[ix.Name] {
			t.Fatalf("index %+v, want %d keys", ix, want[ix.Name])
		}
	}
}

func TestValidateFindsMissingEntry(t *testing.T) {
	c := validColl(t)
	ix := c.state.Load().indexes[2] // tags_1_n_-1
	key := keyenc.AppendKey(nil, []any{"x", int32(1)}, []bool{false, true})
	deleteKey(t, c, entryKey(ix, key, keyenc.AppendValue(nil, int32(1))))
	res := mustValidate(t, c)
	if res.Valid() || len(res.MissingEntries) != 1 || len(res.ExtraEntries) != 0 {
		t.Fatalf("result %+v", res)
	}
	got := bsonutil.Format(res.MissingEntries[0])
	if got != `{ indexName: "tags_1_n_-1", recordId: 1, idKey: { _id: 1 }, indexKey: { tags: "x", n: 1 } }` {
		t.Fatalf("missing entry %s", got)
	}
	wantMessages(t, res.Errors, "Index with name 'tags_1_n_-1' has inconsistencies.")
	wantMessages(t, res.Warnings, "Detected 1 missing index entries.")
	if indexVerdict(res, "tags_1_n_-1") || !indexVerdict(res, "u_1") {
		t.Fatalf("verdicts %+v", res.Indexes)
	}
}

func TestValidateFindsExtraEntryAndDuplicateUniqueKey(t *testing.T) {
	c := validColl(t)
	ix := c.state.Load().indexes[3] // u_1, unique
	setKey(t, c, entryKey(ix, keyenc.AppendValue(nil, "only"), keyenc.AppendValue(nil, int32(2))), keyenc.AppendValue(nil, int32(2)))
	res := mustValidate(t, c)
	if res.Valid() || len(res.ExtraEntries) != 1 || len(res.MissingEntries) != 0 {
		t.Fatalf("result %+v", res)
	}
	if got := bsonutil.Format(res.ExtraEntries[0]); got != `{ indexName: "u_1", recordId: 2, indexKey: { u: "only" } }` {
		t.Fatalf("extra entry %s", got)
	}
	wantMessages(t, res.Errors, "Unique index 'u_1' has duplicate key: { u: \"only\" }", "Index with name 'u_1' has inconsistencies.")
	wantMessages(t, res.Warnings, "Detected 1 extra index entries.")
}

func TestValidateFindsCorruptDocumentAndCountMismatch(t *testing.T) {
	c := validColl(t)
	idEnc := keyenc.AppendValue(nil, int32(5))
	setKey(t, c, docKey(c.meta().ID, idEnc), []byte{5, 0, 0, 0, 1})
	res := mustValidate(t, c)
	if res.Valid() || res.InvalidDocs != 1 || len(res.CorruptRecords) != 1 || !bsonutil.Equal(res.CorruptRecords[0], 5) {
		t.Fatalf("result %+v", res)
	}
	wantMessages(t, res.Errors, "Detected one or more invalid documents. See logs.")
	// The entries of the unreadable document have no document to match.
	if len(res.ExtraEntries) != 6 {
		t.Fatalf("extra entries %v", res.ExtraEntries)
	}
	c.count.Add(1)
	res = mustValidate(t, c)
	wantMessages(t, res.Errors, "the collection's document count (7) does not match the number of records found (6)")
}

func TestValidateFindsEntriesOfUnknownIndex(t *testing.T) {
	c := validColl(t)
	setKey(t, c, append(indexPrefix(c.meta().ID, 99), 1, 2, 3), []byte{1})
	res := mustValidate(t, c)
	wantMessages(t, res.Errors, "found index entries of index id 99, which is not in the catalog")
}

func deleteKey(t *testing.T, c *Collection, key []byte) {
	t.Helper()
	if _, err := c.store.eng.Get(key); err != nil {
		t.Fatalf("the entry to delete is not there: %v", err)
	}
	b := c.store.eng.NewBatch()
	defer b.Close()
	if err := b.Delete(key); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
}

func setKey(t *testing.T, c *Collection, key, value []byte) {
	t.Helper()
	b := c.store.eng.NewBatch()
	defer b.Close()
	if err := b.Set(key, value); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
}

func wantMessages(t *testing.T, got []string, want ...string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Fatalf("messages %q lack %q", strings.Join(got, " | "), w)
		}
	}
}

func indexVerdict(res *ValidateResult, name string) bool {
	for _, ix := range res.Indexes {
		if ix.Name == name {
			return ix.Valid
		}
	}
	return false
}
