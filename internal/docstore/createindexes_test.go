package docstore

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
	"github.com/mayflydb/mayfly/internal/storage/storagetest"
)

// loggedStore opens a store over a change log and returns a function that
// lists the events written since the last call.
func loggedStore(t *testing.T) (*Store, func() []changestream.Record) {
	t.Helper()
	base, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = base.Close() })
	s, _ := openLogged(t, base)
	var mark changestream.Position
	return s, func() []changestream.Record {
		var evs []changestream.Record
		err := changestream.Scan(base, mark, func(r changestream.Record) (bool, error) {
			evs = append(evs, r)
			mark = r.Pos
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
}

func parseSpecs(t *testing.T, specs ...bson.D) []*catalog.Index {
	t.Helper()
	var ixs []*catalog.Index
	for _, spec := range specs {
		ix, err := catalog.ParseIndexSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		ixs = append(ixs, ix)
	}
	return ixs
}

// indexEntries counts the stored entries of every index but _id's.
func indexEntries(t *testing.T, c *Collection) int {
	t.Helper()
	p := collIndexPrefix(c.Meta().ID)
	from := indexPrefix(c.Meta().ID, 1)
	return storagetest.CountKeys(t, c.store.eng, from, prefixEnd(p))
}

// TestCreateIndexesAbortsWholeBuild: mongod builds a command's indexes as
// one build; a duplicate key in the second aborts the first as well, the
// reply is the second's error with the build's context, and no
// createIndexes event is written. Before, a_1 stayed, reported by its
// event.
func TestCreateIndexesAbortsWholeBuild(t *testing.T) {
	s, events := loggedStore(t)
	c, err := s.CreateCollection("db", "c", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	insertN(t, c, 10) // a: i%3 repeats, b: i unique
	events()
	_, err = c.CreateIndexes(parseSpecs(t,
		bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}, {Key: "unique", Value: true}},
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}, {Key: "unique", Value: true}},
	))
	e := mongoerr.As(err)
	if e == nil || e.Code != mongoerr.DuplicateKey {
		t.Fatalf("error %v, want DuplicateKey", err)
	}
	prefix := "Index build failed: "
	suffix := ": Collection db.c ( " + bsonutil.FormatUUID(c.Meta().UUID.Data) + " ) :: caused by :: E11000 duplicate key error collection: db.c index: a_1 dup key: { a: 0 }"
	if !strings.HasPrefix(e.Msg, prefix) || !strings.HasSuffix(e.Msg, suffix) || len(e.Msg) != len(prefix)+36+len(suffix) {
		t.Fatalf("errmsg %q", e.Msg)
	}
	if len(e.Extra) != 2 || e.Extra[0].Key != "keyPattern" || e.Extra[1].Key != "keyValue" {
		t.Fatalf("extra fields %v", e.Extra)
	}
	if n := len(c.Indexes()); n != 1 {
		t.Fatalf("%d indexes after the failed build, want _id's alone", n)
	}
	if n := indexEntries(t, c); n != 0 {
		t.Fatalf("%d entries of the aborted indexes left", n)
	}
	if evs := events(); len(evs) != 0 {
		t.Fatalf("events of the aborted build: %v", evs)
	}
	// The build that follows works and numbers its index after the aborted ones.
	res, err := c.CreateIndexes(parseSpecs(t, bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}, {Key: "unique", Value: true}}))
	if err != nil || res.Before != 1 || res.After != 2 {
		t.Fatalf("next build: %+v %v", res, err)
	}
	if n := indexEntries(t, c); n != 10 {
		t.Fatalf("%d entries after the next build, want 10", n)
	}
}

// TestCreateIndexesChecksAllBeforeBuilding: a later index that conflicts
// with an existing one, or one past the 64 indexes, refuses the command
// before the earlier ones are built (mongod checks every spec first).
func TestCreateIndexesChecksAllBeforeBuilding(t *testing.T) {
	s, events := loggedStore(t)
	c, err := s.CreateCollection("db", "c", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	insertN(t, c, 3)
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: "x_1"}})
	events()
	_, err = c.CreateIndexes(parseSpecs(t,
		bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "y", Value: 1}}}, {Key: "name", Value: "x_1"}},
	))
	if e := mongoerr.As(err); e == nil || e.Code != mongoerr.IndexKeySpecsConflict {
		t.Fatalf("error %v, want IndexKeySpecsConflict", err)
	}
	if n := len(c.Indexes()); n != 2 {
		t.Fatalf("%d indexes, want _id_ and x_1", n)
	}
	var specs []bson.D
	for i := 0; len(c.Indexes())+len(specs) <= catalog.MaxIndexes; i++ {
		f := "f" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		specs = append(specs, bson.D{{Key: "key", Value: bson.D{{Key: f, Value: 1}}}, {Key: "name", Value: f + "_1"}})
	}
	_, err = c.CreateIndexes(parseSpecs(t, specs...))
	if e := mongoerr.As(err); e == nil || e.Code != mongoerr.CannotCreateIndex || !strings.HasPrefix(e.Msg, "add index fails, too many indexes for db.c key:") {
		t.Fatalf("error %v, want CannotCreateIndex", err)
	}
	if n := len(c.Indexes()); n != 2 {
		t.Fatalf("%d indexes after the refused request, want 2", n)
	}
	if evs := events(); len(evs) != 0 {
		t.Fatalf("events of refused requests: %v", evs)
	}
}

// TestCreateIndexesEmptyCollectionOneWrite: on an empty collection each
// index has its own createIndexes event, as on mongod, all in the one
// write that makes them ready.
func TestCreateIndexesEmptyCollectionOneWrite(t *testing.T) {
	s, events := loggedStore(t)
	c, err := s.CreateCollection("db", "c", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	events()
	res, err := c.CreateIndexes(parseSpecs(t,
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}},
	))
	if err != nil || res.After != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	evs := events()
	if len(evs) != 2 || evs[0].Event.Op != changestream.OpCreateIndexes || evs[1].Event.Op != changestream.OpCreateIndexes || evs[0].Pos.TS != evs[1].Pos.TS {
		t.Fatalf("events %v", evs)
	}
}
