package changestream

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
)

// DDL events (showExpandedEvents): create, createIndexes, dropIndexes and
// modify, and the operationDescription of a rename. Each carries what
// mongod's oplog entry would give the stream, built here from the
// catalog; docstore puts it in the batch of the catalog write it
// describes, so that it replicates and commits with it. docs/design/0012
// has the shapes.

// CreateEvent describes the creation of meta's collection, view or
// time-series collection.
func CreateEvent(meta *catalog.Collection) *Event {
	ev := &Event{Op: OpCreate, DB: meta.DB, Coll: meta.Name}
	ev.NsType = NsTypeOf(meta)
	var desc bson.D
	switch ev.NsType {
	case NsView:
		desc = meta.Options // viewOn, pipeline, collation: the system.views entry less its _id
	case NsTimeseries:
		desc = TimeseriesView(meta)
	default:
		ev.UUID = meta.UUID.Data
		desc = append(bson.D{}, meta.Options...)
		// A clustered collection has no _id index, and its oplog
		// entry no idIndex.
		if !meta.Clustered {
			desc = append(desc, bson.E{Key: "idIndex", Value: idIndexSpec(meta)})
		}
	}
	ev.Desc = MarshalDesc(desc)
	return ev
}

// NsTypeOf is what meta describes: a view, a time-series collection or a
// collection.
func NsTypeOf(meta *catalog.Collection) string {
	for _, e := range meta.Options {
		switch e.Key {
		case "viewOn":
			return NsView
		case "timeseries":
			return NsTimeseries
		}
	}
	return NsCollection
}

func idIndexSpec(meta *catalog.Collection) bson.D {
	for i := range meta.Indexes {
		if meta.Indexes[i].IsID() {
			return meta.Indexes[i].Spec
		}
	}
	return catalog.IDIndex().Spec
}

// TimeseriesView is the view mongod defines over a time-series
// collection's buckets, as its system.views entry (less _id) has it:
// what its create and modify events report.
func TimeseriesView(meta *catalog.Collection) bson.D {
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

// DropEvent describes the drop of meta's collection or view.
func DropEvent(meta *catalog.Collection) *Event {
	ev := &Event{Op: OpDrop, DB: meta.DB, Coll: meta.Name}
	if ns := NsTypeOf(meta); ns != NsCollection {
		ev.NsType = ns
	} else {
		ev.UUID = meta.UUID.Data
	}
	return ev
}

// RenameEvent describes a rename; dropped is the UUID of the collection
// it replaced (empty: none).
func RenameEvent(meta *catalog.Collection, fromDB, from string, dropped []byte) *Event {
	ev := &Event{Op: OpRename, DB: fromDB, Coll: from, ToDB: meta.DB, ToColl: meta.Name, UUID: meta.UUID.Data}
	desc := bson.D{{Key: "to", Value: bson.D{{Key: "db", Value: meta.DB}, {Key: "coll", Value: meta.Name}}}}
	if len(dropped) > 0 {
		desc = append(desc, bson.E{Key: "dropTarget", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: dropped}})
	}
	ev.Desc = MarshalDesc(desc)
	return ev
}

// IndexesEvent is a createIndexes or dropIndexes event listing specs.
func IndexesEvent(op Op, meta *catalog.Collection, specs ...bson.D) *Event {
	list := make(bson.A, len(specs))
	for i, s := range specs {
		list[i] = s
	}
	return &Event{Op: op, DB: meta.DB, Coll: meta.Name, UUID: meta.UUID.Data,
		Desc: MarshalDesc(bson.D{{Key: "indexes", Value: list}})}
}

func MarshalDesc(d bson.D) []byte {
	if d == nil {
		d = bson.D{}
	}
	raw, err := bson.Marshal(d)
	if err != nil {
		return nil // a catalog entry always marshals: it was stored so
	}
	return raw
}
