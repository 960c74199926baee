// Package oplog shows a replica set member's change log as mongod's oplog
// (local.oplog.rs): one entry per write, in mongod's format, for the tools
// that read the oplog to learn its window or its writes (mongosh's
// rs.printReplicationInfo, monitoring agents, mongodump --oplog).
//
// A write of one change is one entry (op "i", "u", "d" or "c"); a write of
// several, which Mayfly commits atomically under one timestamp, is one
// applyOps entry holding them, as mongod logs a transaction. Expiry
// warnings have no oplog counterpart and are left out.
//
// The other way, Applier applies such entries to collections, as the
// applyOps command and mongorestore --oplogReplay ask.
package oplog

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
)

// Entry is the oplog entry of one write: the change log records stamped
// with one timestamp, in order. ok is false when none of them has an
// oplog counterpart.
func Entry(write []changestream.Record) (entry bson.D, ok bool, err error) {
	var ops []bson.D
	for _, rec := range write {
		more, err := opsOf(rec.Event)
		if err != nil {
			return nil, false, fmt.Errorf("oplog: entry at %d:%d: %w", rec.Pos.TS.T, rec.Pos.TS.I, err)
		}
		ops = append(ops, more...)
	}
	if len(ops) == 0 {
		return nil, false, nil
	}
	head := ops[0]
	if len(ops) > 1 {
		list := make(bson.A, len(ops))
		for i, op := range ops {
			list[i] = op
		}
		head = bson.D{
			{Key: "op", Value: "c"},
			{Key: "ns", Value: "admin.$cmd"},
			{Key: "o", Value: bson.D{{Key: "applyOps", Value: list}}},
		}
	}
	last := write[len(write)-1]
	return append(head,
		bson.E{Key: "ts", Value: bson.Timestamp{T: last.Pos.TS.T, I: last.Pos.TS.I}},
		bson.E{Key: "v", Value: int64(2)},
		bson.E{Key: "wall", Value: bson.DateTime(last.WallMillis)},
	), true, nil
}

// opsOf is the oplog operations one change stands for, without the
// write's timestamp.
func opsOf(ev *changestream.Event) ([]bson.D, error) {
	switch ev.Op {
	case changestream.OpInsert, changestream.OpReplace:
		return docOp(ev)
	case changestream.OpUpdate:
		return updateOp(ev)
	case changestream.OpDelete:
		id, err := ev.DocumentID()
		if err != nil {
			return nil, err
		}
		return []bson.D{crudOp("d", ev, bson.D{{Key: "_id", Value: id}}, nil)}, nil
	case changestream.OpExpiring:
		return nil, nil
	}
	return commandOps(ev)
}

func docOp(ev *changestream.Event) ([]bson.D, error) {
	doc, err := bsonutil.DecodeD(ev.Doc, 0)
	if err != nil {
		return nil, fmt.Errorf("document: %w", err)
	}
	id, _ := bsonutil.Lookup(doc, "_id")
	op := "i"
	if ev.Op == changestream.OpReplace {
		op = "u"
	}
	return []bson.D{crudOp(op, ev, doc, bson.D{{Key: "_id", Value: id}})}, nil
}

func updateOp(ev *changestream.Event) ([]bson.D, error) {
	id, err := ev.DocumentID()
	if err != nil {
		return nil, err
	}
	desc, err := bsonutil.DecodeD(ev.Update, 0)
	if err != nil {
		return nil, fmt.Errorf("update description: %w", err)
	}
	diff, err := Diff(desc)
	if err != nil {
		return nil, err
	}
	o := bson.D{{Key: "$v", Value: int32(2)}, {Key: "diff", Value: diff}}
	return []bson.D{crudOp("u", ev, o, bson.D{{Key: "_id", Value: id}})}, nil
}

// crudOp is an operation on a document of ev's collection.
func crudOp(op string, ev *changestream.Event, o, o2 bson.D) bson.D {
	d := bson.D{{Key: "op", Value: op}, {Key: "ns", Value: ev.DB + "." + ev.Coll}}
	if len(ev.UUID) == 16 {
		d = append(d, bson.E{Key: "ui", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: ev.UUID}})
	}
	d = append(d, bson.E{Key: "o", Value: o})
	if o2 != nil {
		d = append(d, bson.E{Key: "o2", Value: o2})
	}
	return d
}
