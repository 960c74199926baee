package shardmerge

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// ForeignStages are the stages that name a collection besides the one
// the pipeline reads, and whether they write it: a router can run them
// only where every collection they name lives.
var ForeignStages = map[string]bool{"$lookup": false, "$graphLookup": false, "$unionWith": false, "$out": true, "$merge": true}

// ForeignNamespaces lists the namespaces a pipeline's stages name (nested
// pipelines included), the first stage that names one, and whether the
// pipeline writes.
func ForeignNamespaces(db string, pipeline bson.A) (nss []string, first string, writes bool) {
	for _, raw := range pipeline {
		d := bsonutil.ToD(raw)
		if len(d) != 1 {
			continue
		}
		name, spec := d[0].Key, d[0].Value
		if name == "$facet" {
			for _, sub := range bsonutil.ToD(spec) {
				n, f, w := ForeignNamespaces(db, bsonutil.ToA(sub.Value))
				nss, writes = append(nss, n...), writes || w
				first = cmpOr(first, f)
			}
			continue
		}
		write, ok := ForeignStages[name]
		if !ok {
			continue
		}
		first, writes = cmpOr(first, name), writes || write
		nss = append(nss, stageNamespace(db, name, spec))
		if sub, ok := bsonutil.Field(bsonutil.ToD(spec), "pipeline"); ok {
			n, _, _ := ForeignNamespaces(db, bsonutil.ToA(sub))
			nss = append(nss, n...)
		}
	}
	return nss, first, writes
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// stageNamespace is the collection a stage names: a name in db, or a
// {db, coll} document ($merge's under "into"; $unionWith's coll alone).
func stageNamespace(db, name string, spec any) string {
	target := spec
	switch name {
	case "$merge":
		if d, ok := spec.(bson.D); ok {
			target, _ = bsonutil.Field(d, "into")
		}
	case "$lookup", "$graphLookup":
		target, _ = bsonutil.Field(bsonutil.ToD(spec), "from")
	case "$unionWith":
		if d, ok := spec.(bson.D); ok {
			target, _ = bsonutil.Field(d, "coll")
		}
	}
	switch t := target.(type) {
	case string:
		return db + "." + t
	case bson.D:
		tdb, _ := bsonutil.Field(t, "db")
		coll, _ := bsonutil.Field(t, "coll")
		s, _ := tdb.(string)
		c, _ := coll.(string)
		return cmpOr(s, db) + "." + c
	}
	return db + "." // no collection: a $lookup with a pipeline alone reads none
}
