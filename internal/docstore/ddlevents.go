package docstore

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
)

// DDL events (showExpandedEvents): create, createIndexes, dropIndexes and
// modify, and the operationDescription of a rename. Each carries what
// mongod's oplog entry would give the stream, built here from the
// catalog, and goes into the batch of the catalog write it describes, so
// that it replicates and commits with it. docs/design/0012 has the shapes.

// createEvent describes the creation of meta's collection, view or
// time-series collection.
func createEvent(meta *catalog.Collection) *changestream.Event {
	ev := &changestream.Event{Op: changestream.OpCreate, DB: meta.DB, Coll: meta.Name}
	ev.NsType = nsTypeOf(meta)
	var desc bson.D
	switch ev.NsType {
	case changestream.NsView:
		desc = meta.Options // viewOn, pipeline, collation: the system.views entry less its _id
	case changestream.NsTimeseries:
		desc = timeseriesView(meta)
	default:
		ev.UUID = meta.UUID.Data
		desc = append(bson.D{}, meta.Options...)
		// A clustered collection has no _id index, and its oplog
		// entry no idIndex.
		if !meta.Clustered {
			desc = append(desc, bson.E{Key: "idIndex", Value: idIndexSpec(meta)})
		}
	}
	ev.Desc = marshalDesc(desc)
	return ev
}

// nsTypeOf is what meta describes: a view, a time-series collection or a
// collection.
func nsTypeOf(meta *catalog.Collection) string {
	for _, e := range meta.Options {
		switch e.Key {
		case "viewOn":
			return changestream.NsView
		case "timeseries":
			return changestream.NsTimeseries
		}
	}
	return changestream.NsCollection
}

func idIndexSpec(meta *catalog.Collection) bson.D {
	for i := range meta.Indexes {
		if meta.Indexes[i].IsID() {
			return meta.Indexes[i].Spec
		}
	}
	return catalog.IDIndex().Spec
}

// timeseriesView is the view mongod defines over a time-series
// collection's buckets, as its system.views entry (less _id) has it:
// what its create and modify events report.
func timeseriesView(meta *catalog.Collection) bson.D {
	var ts bson.D
	for _, e := range meta.Options {
		if e.Key == "timeseries" {
			ts, _ = e.Value.(bson.D)
		}
	}
	unpack := bson.D{}
	for _, k := range []string{"timeField", "metaField", "bucketMaxSpanSeconds"} {
		for _, e := range ts {
			if e.Key == k {
				unpack = append(unpack, e)
			}
		}
	}
	return bson.D{
		{Key: "viewOn", Value: "system.buckets." + meta.Name},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$_internalUnpackBucket", Value: unpack}}}},
	}
}

// dropEvent describes the drop of meta's collection or view.
func dropEvent(meta *catalog.Collection) *changestream.Event {
	ev := &changestream.Event{Op: changestream.OpDrop, DB: meta.DB, Coll: meta.Name}
	if ns := nsTypeOf(meta); ns != changestream.NsCollection {
		ev.NsType = ns
	} else {
		ev.UUID = meta.UUID.Data
	}
	return ev
}

// renameEvent describes a rename; dropped is the UUID of the collection
// it replaced (empty: none).
func renameEvent(meta *catalog.Collection, fromDB, from string, dropped []byte) *changestream.Event {
	ev := &changestream.Event{Op: changestream.OpRename, DB: fromDB, Coll: from, ToDB: meta.DB, ToColl: meta.Name, UUID: meta.UUID.Data}
	desc := bson.D{{Key: "to", Value: bson.D{{Key: "db", Value: meta.DB}, {Key: "coll", Value: meta.Name}}}}
	if len(dropped) > 0 {
		desc = append(desc, bson.E{Key: "dropTarget", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: dropped}})
	}
	ev.Desc = marshalDesc(desc)
	return ev
}

// indexesEvent is a createIndexes or dropIndexes event listing specs.
func indexesEvent(op changestream.Op, meta *catalog.Collection, specs ...bson.D) *changestream.Event {
	list := make(bson.A, len(specs))
	for i, s := range specs {
		list[i] = s
	}
	return &changestream.Event{Op: op, DB: meta.DB, Coll: meta.Name, UUID: meta.UUID.Data,
		Desc: marshalDesc(bson.D{{Key: "indexes", Value: list}})}
}

func marshalDesc(d bson.D) []byte {
	if d == nil {
		d = bson.D{}
	}
	raw, err := bson.Marshal(d)
	if err != nil {
		return nil // a catalog entry always marshals: it was stored so
	}
	return raw
}
