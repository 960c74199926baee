package oplog

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
)

// commandOps is the "c" operations of a catalog change, shaped as mongod
// logs the command that made it.
func commandOps(ev *changestream.Event) ([]bson.D, error) {
	desc, err := decodeOptional(ev.Desc)
	if err != nil {
		return nil, fmt.Errorf("operation description: %w", err)
	}
	switch ev.Op {
	case changestream.OpCreate:
		return one(ev, append(bson.D{{Key: "create", Value: ev.Coll}}, desc...), nil), nil
	case changestream.OpDrop:
		return one(ev, bson.D{{Key: "drop", Value: ev.Coll}}, nil), nil
	case changestream.OpModify:
		return one(ev, append(bson.D{{Key: "collMod", Value: ev.Coll}}, desc...), nil), nil
	case changestream.OpDropDatabase:
		return one(ev, bson.D{{Key: "dropDatabase", Value: int32(1)}}, nil), nil
	case changestream.OpRename:
		o := bson.D{
			{Key: "renameCollection", Value: ev.DB + "." + ev.Coll},
			{Key: "to", Value: ev.ToDB + "." + ev.ToColl},
			{Key: "stayTemp", Value: false},
		}
		if v, ok := bsonutil.Lookup(desc, "dropTarget"); ok {
			o = append(o, bson.E{Key: "dropTarget", Value: v})
		}
		return one(ev, o, nil), nil
	case changestream.OpCreateIndexes, changestream.OpDropIndexes:
		return indexOps(ev, desc)
	}
	return nil, fmt.Errorf("change %v has no oplog form", ev.Op)
}

// indexOps is one operation per index, as mongod logs an index built on
// an empty collection and each index a dropIndexes removed.
func indexOps(ev *changestream.Event, desc bson.D) ([]bson.D, error) {
	v, _ := bsonutil.Lookup(desc, "indexes")
	specs, _ := v.(bson.A)
	ops := make([]bson.D, 0, len(specs))
	for _, s := range specs {
		spec, ok := s.(bson.D)
		if !ok {
			return nil, fmt.Errorf("index spec is %T, not a document", s)
		}
		if ev.Op == changestream.OpCreateIndexes {
			ops = append(ops, one(ev, append(bson.D{{Key: "createIndexes", Value: ev.Coll}}, spec...), nil)...)
			continue
		}
		name, _ := bsonutil.Lookup(spec, "name")
		ops = append(ops, one(ev, bson.D{{Key: "dropIndexes", Value: ev.Coll}, {Key: "index", Value: name}}, spec)...)
	}
	return ops, nil
}

// one is a command operation on ev's database.
func one(ev *changestream.Event, o, o2 bson.D) []bson.D {
	d := bson.D{{Key: "op", Value: "c"}, {Key: "ns", Value: ev.DB + ".$cmd"}}
	if len(ev.UUID) == 16 {
		d = append(d, bson.E{Key: "ui", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: ev.UUID}})
	}
	d = append(d, bson.E{Key: "o", Value: o})
	if o2 != nil {
		d = append(d, bson.E{Key: "o2", Value: o2})
	}
	return []bson.D{d}
}

func decodeOptional(raw []byte) (bson.D, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return bsonutil.DecodeD(raw, 0)
}
