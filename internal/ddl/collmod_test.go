package ddl

import (
	"context"
	"testing"

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
	c, err := docstoretest.Open(t).CreateCollection("db", "c", docstore.CreateOptions{})
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
	return c
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
