// Package profiler writes the database profiler's entries into
// <db>.system.profile, a capped collection made on first use, as mongod
// does. Which operations a database profiles is activity.Profiler's
// setting; what an entry holds is its caller's.
package profiler

import (
	"log/slog"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Collection is where the database profiler writes, as in mongod.
const Collection = "system.profile"

// capBytes is the size of an automatically created system.profile.
const capBytes = 1 << 20

// Record appends entry to db's system.profile, creating it first.
// Failures are logged, never returned: profiling must not fail the
// operation it describes.
func Record(store *docstore.Store, logger *slog.Logger, db string, entry bson.D) {
	c, err := profileOf(store, db)
	if err != nil {
		logger.Warn("profiler: create system.profile", "db", db, "err", err)
		return
	}
	doc, err := docstore.PrepareInsert(entry)
	if err == nil {
		err = c.Insert(doc, docstore.WriteOptions{})
	}
	if err != nil {
		logger.Warn("profiler: write entry", "db", db, "err", err)
	}
}

// profileOf returns db's system.profile, created as a capped collection
// when there is none (or found made by a concurrent first entry).
func profileOf(store *docstore.Store, db string) (*docstore.Collection, error) {
	if c := store.Collection(db, Collection); c != nil {
		return c, nil
	}
	c, err := store.CreateCollection(db, Collection, docstore.CreateOptions{
		Capped: true, CappedSize: capBytes,
		Raw: bson.D{{Key: "capped", Value: true}, {Key: "size", Value: int64(capBytes)}},
	})
	if err != nil && mongoerr.As(err).Code != mongoerr.NamespaceExists {
		return nil, err
	}
	if c == nil {
		c = store.Collection(db, Collection)
	}
	return c, nil
}
