package ddl

import (
	"context"
	"reflect"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/docstore/docstoretest"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// newCollection is db.c in an in-memory store, with a TTL index "at" on
// items.at (expireAfterSeconds 60).
func newCollection(t *testing.T) *docstore.Collection {
	t.Helper()
	_, c := newCollectionIn(t)
	return c
}

// newCollectionIn is newCollection with its store.
func newCollectionIn(t *testing.T) (*docstore.Store, *docstore.Collection) {
	t.Helper()
	s := docstoretest.Open(t)
	c, err := s.CreateCollection("db", "c", docstore.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	ix, err := catalog.ParseIndexSpec(bson.D{{Key: "key", Value: bson.D{{Key: "items.at", Value: int32(1)}}},
		{Key: "name", Value: "at"}, {Key: "expireAfterSeconds", Value: int32(60)}})
	if err != nil {
		t.Fatalf("index spec: %v", err)
	}
	if _, err := c.CreateIndexesContext(context.Background(), []*catalog.Index{ix}); err != nil {
		t.Fatalf("create index: %v", err)
	}
	return s, c
}

// modIndex runs collMod's index option {name: "at", option: on} and
// commits it.
func modIndex(t *testing.T, c *docstore.Collection, option string, on bool) bson.D {
	t.Helper()
	e := c.Edit()
	defer e.Close()
	reply, _, err := ModIndex(context.Background(), e, bson.D{{Key: "name", Value: "at"}, {Key: option, Value: on}})
	if err != nil {
		t.Fatalf("%s: %v: %v", option, on, err)
	}
	if err := e.Commit(nil); err != nil {
		t.Fatalf("commit: %v", err)
	}
	return reply
}

// TestModIndexBoolOptions: each bool option of collMod's index answers
// its old and new values when it changes, nothing when it does not, and
// is kept in the index's spec only while on.
func TestModIndexBoolOptions(t *testing.T) {
	for _, option := range []string{"hidden", "prepareUnique", catalog.RefreshOnReadOption, catalog.ExpireElementsOption} {
		t.Run(option, func(t *testing.T) {
			c := newCollection(t)
			steps := []struct {
				on    bool
				reply bson.D
			}{
				{true, bson.D{{Key: option + "_old", Value: false}, {Key: option + "_new", Value: true}}},
				{true, nil},
				{false, bson.D{{Key: option + "_old", Value: true}, {Key: option + "_new", Value: false}}},
				{false, nil},
			}
			for i, step := range steps {
				if got := modIndex(t, c, option, step.on); bsonutil.Compare(got, step.reply) != 0 {
					t.Fatalf("step %d: reply %v, want %v", i, got, step.reply)
				}
				spec := c.Meta().Index("at").Spec
				if v, kept := bsonutil.Field(spec, option); kept != step.on || (kept && v != true) {
					t.Fatalf("step %d: spec %v", i, spec)
				}
			}
		})
	}
}

// TestModIndexRefusesAWrongType: every bool option refuses another type
// with mongod's IDL error, naming the option under index.
func TestModIndexRefusesAWrongType(t *testing.T) {
	c := newCollection(t)
	for _, option := range []string{"hidden", "unique", "prepareUnique", catalog.RefreshOnReadOption, catalog.ExpireElementsOption} {
		e := c.Edit()
		_, _, err := ModIndex(context.Background(), e, bson.D{{Key: "name", Value: "at"}, {Key: option, Value: "yes"}})
		e.Close()
		me := mongoerr.As(err)
		want := "BSON field 'collMod.index." + option + "' is the wrong type 'string', expected type 'bool'"
		if me == nil || me.Code != mongoerr.TypeMismatch || me.Msg != want {
			t.Fatalf("%s: %v", option, err)
		}
	}
}

// TestModIndexAcrossATransaction: a transaction that wrote to the
// collection before a collMod of one of its index's options, and commits
// after it, conflicts (WriteConflict) when the option changes what its
// writes must do: it wrote for the options it met. mongod's collMod
// waits for such a transaction instead; either way no write commits
// under options it did not meet. One row per option of collMod's index
// (indexMod's fields), so that a new option needs a row.
func TestModIndexAcrossATransaction(t *testing.T) {
	rows := map[string]struct {
		before   bson.D // a collMod committed before the transaction begins
		change   bson.D // the collMod between its write and its commit
		conflict bool
	}{
		"expireAfterSeconds":        {change: bson.D{{Key: "expireAfterSeconds", Value: int32(120)}}, conflict: true},
		"hidden":                    {change: bson.D{{Key: "hidden", Value: true}}},
		catalog.RefreshOnReadOption: {change: bson.D{{Key: catalog.RefreshOnReadOption, Value: true}}},
		catalog.LRULimitOption: {change: bson.D{{Key: catalog.LRULimitOption, Value: bson.D{{Key: "documents", Value: int32(100)}}}},
			conflict: true},
		catalog.ExpireElementsOption: {change: bson.D{{Key: catalog.ExpireElementsOption, Value: true}}, conflict: true},
		catalog.WarningOption:        {change: bson.D{{Key: catalog.WarningOption, Value: int32(30)}}, conflict: true},
		"prepareUnique":              {change: bson.D{{Key: "prepareUnique", Value: true}}, conflict: true},
		"unique": {before: bson.D{{Key: "prepareUnique", Value: true}}, change: bson.D{{Key: "unique", Value: true}},
			conflict: true},
	}
	if n := reflect.TypeOf(indexMod{}).NumField(); len(rows) != n {
		t.Fatalf("%d rows for collMod's %d index options", len(rows), n)
	}
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	for option, row := range rows {
		t.Run(option, func(t *testing.T) {
			s, c := newCollectionIn(t)
			doc := func(id, minutes int) bson.D {
				return bson.D{{Key: "_id", Value: id}, {Key: "items", Value: bson.A{bson.D{{Key: "at", Value: bson.NewDateTimeFromTime(at.Add(time.Duration(minutes) * time.Minute))}}}}}
			}
			d, err := docstore.PrepareInsert(doc(1, 0))
			if err == nil {
				err = c.Insert(d, docstore.WriteOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
			if row.before != nil {
				mod(t, c, row.before)
			}
			x := s.BeginTxn()
			key := 0 // document 1's date, but under prepareUnique
			if row.before != nil {
				key = 1
			}
			if err := x.Insert(c, doc(2, key)); err != nil {
				t.Fatal(err)
			}
			mod(t, c, row.change)
			err = x.Commit(docstore.WriteOptions{})
			if me := mongoerr.As(err); row.conflict != (me != nil && me.Code == mongoerr.WriteConflict) {
				t.Fatalf("commit after the collMod: %v; want a write conflict: %v", err, row.conflict)
			}
			res, err := c.Validate(context.Background())
			if err != nil || !res.Valid() {
				t.Fatalf("validate: %+v, %v", res, err)
			}
		})
	}
}

// mod commits collMod's index option {name: "at", <change>}.
func mod(t *testing.T, c *docstore.Collection, change bson.D) {
	t.Helper()
	e := c.Edit()
	defer e.Close()
	if _, _, err := ModIndex(context.Background(), e, append(bson.D{{Key: "name", Value: "at"}}, change...)); err != nil {
		t.Fatalf("collMod %v: %v", change, err)
	}
	if err := e.Commit(nil); err != nil {
		t.Fatal(err)
	}
}
