package ddl

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/timeseries"
)

// ModEvent is the modify event of a collMod of options opts
// (showExpandedEvents), with what mongod's oplog entry gives the stream:
// operationDescription is opts, its index field cut to the index's name
// and the options that changed; stateBeforeChange has the collection's
// options before (with its uuid) and, for an index change, the index's
// old values. On a time-series collection only a granularity change is
// reported (mongod modifies the view over the buckets then;
// expireAfterSeconds changes the buckets collection, a system one no
// stream shows): nil otherwise.
func ModEvent(e *docstore.CatalogEdit, opts bson.D) *docstore.Modify {
	old, now := e.Old(), e.Meta()
	if timeseries.Of(old) != nil {
		if _, ok := bsonutil.Field(opts, "timeseries"); !ok {
			return nil
		}
		return &docstore.Modify{}
	}
	desc := bson.D{}
	var ixBefore bson.D
	for _, e := range opts {
		if spec, ok := e.Value.(bson.D); ok && e.Key == "index" {
			var ixDesc bson.D
			ixDesc, ixBefore = indexModDesc(spec, old, now)
			desc = append(desc, bson.E{Key: "index", Value: ixDesc})
			continue
		}
		desc = append(desc, e)
	}
	options := append(bson.D{{Key: "uuid", Value: old.UUID}}, old.Options...)
	before := bson.D{{Key: "collectionOptions", Value: options}}
	if ixBefore != nil {
		before = append(before, bson.E{Key: "indexOptions", Value: ixBefore})
	}
	return &docstore.Modify{Desc: desc, Before: before}
}

// indexModDesc is a collMod index change as mongod reports it: the
// index's name and the options that changed (expireAfterSeconds as a
// long), and their values before.
func indexModDesc(spec bson.D, old, now *catalog.Collection) (desc, before bson.D) {
	target, _, err := parseIndexMod(spec)
	if err != nil {
		return spec, bson.D{}
	}
	name := indexNameFor(old, target)
	desc, before = bson.D{{Key: "name", Value: name}}, bson.D{}
	was, is := old.Index(name), now.Index(name)
	if was == nil || is == nil {
		return desc, before
	}
	if is.TTL && (!was.TTL || was.ExpireAfter != is.ExpireAfter) {
		desc = append(desc, bson.E{Key: "expireAfterSeconds", Value: is.ExpireAfter})
		if was.TTL {
			before = append(before, bson.E{Key: "expireAfterSeconds", Value: was.ExpireAfter})
		}
	}
	if was.Hidden != is.Hidden {
		desc = append(desc, bson.E{Key: "hidden", Value: is.Hidden})
		before = append(before, bson.E{Key: "hidden", Value: was.Hidden})
	}
	if was.Unique != is.Unique {
		desc = append(desc, bson.E{Key: "unique", Value: is.Unique})
		before = append(before, bson.E{Key: "unique", Value: was.Unique})
	}
	if was.PrepareUnique != is.PrepareUnique {
		desc = append(desc, bson.E{Key: "prepareUnique", Value: is.PrepareUnique})
		before = append(before, bson.E{Key: "prepareUnique", Value: was.PrepareUnique})
	}
	// Mayfly's own index options, as the command gave them.
	for _, k := range []string{catalog.RefreshOnReadOption, catalog.LRULimitOption, catalog.ExpireElementsOption} {
		if v, ok := bsonutil.Field(spec, k); ok {
			desc = append(desc, bson.E{Key: k, Value: v})
		}
	}
	return desc, before
}

// indexNameFor is the name of the index a collMod named or gave the key
// pattern of.
func indexNameFor(m *catalog.Collection, target any) string {
	if name, ok := target.(string); ok {
		return name
	}
	if key, ok := target.(bson.D); ok {
		if found := IndexesByKey(m, key); len(found) > 0 {
			return found[0].Name
		}
	}
	return ""
}
