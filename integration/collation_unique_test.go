package integration

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

var caseless = bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: int32(2)}}

// TestUniqueIndexUnderCollation: a unique index with a case-insensitive
// collation keeps one e-mail address per case-insensitive spelling, on
// insert, on update and when built over existing documents, and answers
// mongod's duplicate-key error naming the collation.
func TestUniqueIndexUnderCollation(t *testing.T) {
	db := newDB(t)
	users := db.Collection("users")
	_, err := users.Indexes().CreateOne(ctxT(t), mongo.IndexModel{
		Keys:    bson.D{{Key: "email", Value: 1}},
		Options: options.Index().SetUnique(true).SetCollation(&options.Collation{Locale: "en", Strength: 2}),
	})
	if err != nil {
		t.Fatalf("create the unique index: %v", err)
	}
	if _, err := users.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}, {Key: "email", Value: "Alice@Example.com"}}); err != nil {
		t.Fatal(err)
	}
	_, err = users.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 2}, {Key: "email", Value: "alice@example.COM"}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 11000 {
		t.Fatalf("a second spelling of the address: %v, want E11000", err)
	}
	msg := we.WriteErrors[0].Message
	if !strings.Contains(msg, "index: email_1 collation: { locale: \"en\"") || !strings.Contains(msg, "dup key: { email: \"0x") {
		t.Errorf("duplicate key message %q lacks the collation and the hex key mongod shows", msg)
	}
	if _, err := users.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 3}, {Key: "email", Value: "bob@example.com"}}); err != nil {
		t.Fatal(err)
	}
	_, err = users.UpdateOne(ctxT(t), bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "email", Value: "ALICE@EXAMPLE.COM"}}}})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("an update to another spelling: %v, want a duplicate key error", err)
	}

	dups := db.Collection("dups")
	if _, err := dups.InsertMany(ctxT(t), []any{bson.D{{Key: "n", Value: "x"}}, bson.D{{Key: "n", Value: "X"}}}); err != nil {
		t.Fatal(err)
	}
	_, err = dups.Indexes().CreateOne(ctxT(t), mongo.IndexModel{
		Keys:    bson.D{{Key: "n", Value: 1}},
		Options: options.Index().SetUnique(true).SetCollation(&options.Collation{Locale: "en", Strength: 2}),
	})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("building over two spellings: %v, want a duplicate key error", err)
	}
}

// TestCollatedIndexAnswersLikeACollectionScan: over strings that differ in
// case and accents, every comparison a planner turns into bounds answers
// through an index with a collation exactly as a collection scan does,
// for queries under the index's collation (which use its bounds), under
// another collation and under none (which must not bound its strings).
func TestCollatedIndexAnswersLikeACollectionScan(t *testing.T) {
	db := newDB(t)
	coll := db.Collection("words")
	words := []string{"apple", "Apple", "APPLE", "äpple", "banana", "Banana", "cherry", "Cherry", "ch", "b", "B", ""}
	docs := make([]any, 0, len(words)+2)
	for i, w := range words {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "w", Value: w}})
	}
	docs = append(docs, bson.D{{Key: "_id", Value: 100}, {Key: "w", Value: 5}}, bson.D{{Key: "_id", Value: 101}})
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{
		Keys: bson.D{{Key: "w", Value: 1}}, Options: options.Index().SetCollation(&options.Collation{Locale: "en", Strength: 2}),
	}); err != nil {
		t.Fatal(err)
	}
	filters := []bson.D{
		{{Key: "w", Value: "APPLE"}},
		{{Key: "w", Value: bson.D{{Key: "$gt", Value: "b"}}}},
		{{Key: "w", Value: bson.D{{Key: "$gte", Value: "B"}}}},
		{{Key: "w", Value: bson.D{{Key: "$lt", Value: "Banana"}}}},
		{{Key: "w", Value: bson.D{{Key: "$lte", Value: "CH"}}}},
		{{Key: "w", Value: bson.D{{Key: "$in", Value: bson.A{"cherry", "B", 5}}}}},
		{{Key: "w", Value: bson.D{{Key: "$gt", Value: 1}}}},
		{{Key: "w", Value: nil}},
	}
	collations := map[string]*options.Collation{
		"the index's":   {Locale: "en", Strength: 2},
		"another":       {Locale: "en", Strength: 1},
		"simple (none)": nil,
	}
	for _, f := range filters {
		for name, c := range collations {
			want := collatedIDs(t, coll, f, c, bson.D{{Key: "$natural", Value: 1}})
			got := collatedIDs(t, coll, f, c, nil)
			hinted := collatedIDs(t, coll, f, c, bson.D{{Key: "w", Value: 1}})
			if !slices.Equal(got, want) || !slices.Equal(hinted, want) {
				t.Errorf("%v under %s collation: planned %v, hinted %v, collection scan %v", f, name, got, hinted, want)
			}
		}
	}
	cmd := bson.D{{Key: "find", Value: "words"}, {Key: "filter", Value: bson.D{{Key: "w", Value: "APPLE"}}}, {Key: "collation", Value: caseless}}
	ex := explainFind(t, db, cmd, "queryPlanner")
	if stages := planStages(t, ex); stages != "FETCH>IXSCAN" {
		t.Fatalf("an equality under the index's collation planned %s, want FETCH>IXSCAN", stages)
	}
	bounds := fmt.Sprint(field(t, stageNamed(t, field(t, field(t, ex, "queryPlanner").(bson.D), "winningPlan").(bson.D), "IXSCAN"), "indexBounds"))
	if !strings.Contains(bounds, "CollationKey(0x") {
		t.Errorf("index bounds %s do not show the collation key as mongod does", bounds)
	}
	sorted := collatedIDs(t, coll, bson.D{{Key: "w", Value: bson.D{{Key: "$type", Value: "string"}}}}, nil, nil, options.Find().SetSort(bson.D{{Key: "w", Value: 1}}))
	wantOrder := slices.Clone(words)
	slices.Sort(wantOrder)
	var gotOrder []string
	for _, id := range sorted {
		gotOrder = append(gotOrder, words[id])
	}
	if !slices.Equal(gotOrder, wantOrder) {
		t.Errorf("a sort without collation beside the collated index: %q, want binary order %q", gotOrder, wantOrder)
	}
}

// collatedIDs returns the _ids find answers, in the order it answers them
// (sorted by _id when the options give no sort).
func collatedIDs(t *testing.T, coll *mongo.Collection, filter bson.D, c *options.Collation, hint any, more ...*options.FindOptionsBuilder) []int {
	t.Helper()
	opts := options.Find().SetCollation(c)
	if hint != nil {
		opts.SetHint(hint)
	}
	sortGiven := len(more) > 0
	cur, err := coll.Find(ctxT(t), filter, append([]options.Lister[options.FindOptions]{opts}, toListers(more)...)...)
	if err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	var out []struct {
		ID int `bson:"_id"`
	}
	if err := cur.All(ctxT(t), &out); err != nil {
		t.Fatal(err)
	}
	ids := make([]int, 0, len(out))
	for _, d := range out {
		ids = append(ids, d.ID)
	}
	if !sortGiven {
		slices.Sort(ids)
	}
	return ids
}

func toListers(bs []*options.FindOptionsBuilder) []options.Lister[options.FindOptions] {
	out := make([]options.Lister[options.FindOptions], len(bs))
	for i, b := range bs {
		out[i] = b
	}
	return out
}
