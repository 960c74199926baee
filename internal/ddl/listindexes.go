package ddl

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/timeseries"
)

// IndexListing is how listIndexes shows a collection's indexes: each by
// its specification, those being built too (as mongod lists them), and,
// when includeBuildUUIDs or includeIndexBuildInfo asks, a build's UUID
// beside the specification of each index it builds.
type IndexListing struct{ BuildUUIDs, BuildInfo bool }

// Check refuses the two flags together, as mongod does.
func (l IndexListing) Check() error {
	if l.BuildUUIDs && l.BuildInfo {
		return mongoerr.New(mongoerr.InvalidOptions, "The includeBuildUUIDs flag and includeBuildIndexInfo flag cannot both be set to true")
	}
	return nil
}

// List lists meta's indexes, _id first.
func (l IndexListing) List(meta *catalog.Collection) []bson.D {
	var docs []bson.D
	for _, ix := range meta.Indexes {
		switch {
		case ix.IsID() && meta.Clustered:
			docs = append(docs, l.entry(meta.ClusteredIndexSpec(), nil))
		case ix.IsID():
			docs = append(docs, l.entry(IDIndexSpec(ix.Spec, meta.Options), nil))
		case timeseries.Visible(&ix):
			docs = append(docs, l.entry(ix.Spec, ix.BuildUUID))
		}
	}
	return docs
}

// entry is the listed form of spec, whose build is the UUID bytes of its
// build under way (nil: ready).
func (l IndexListing) entry(spec bson.D, build []byte) bson.D {
	uuid := bson.Binary{Subtype: bson.TypeBinaryUUID, Data: build}
	switch {
	case l.BuildInfo && build != nil:
		return bson.D{{Key: "spec", Value: spec}, {Key: "indexBuildInfo", Value: bson.D{{Key: "buildUUID", Value: uuid}}}}
	case l.BuildInfo:
		return bson.D{{Key: "spec", Value: spec}}
	case l.BuildUUIDs && build != nil:
		return bson.D{{Key: "spec", Value: spec}, {Key: "buildUUID", Value: uuid}}
	}
	return spec
}

// IDIndexSpec is the _id index as listed: on a collection with a default
// collation it carries that collation, as mongod's does (Mayfly's _id
// index stays binary).
func IDIndexSpec(spec, options bson.D) bson.D {
	coll, ok := bsonutil.Field(options, "collation")
	if !ok {
		return spec
	}
	if _, has := bsonutil.Field(spec, "collation"); has {
		return spec
	}
	return append(append(bson.D{}, spec...), bson.E{Key: "collation", Value: coll})
}
