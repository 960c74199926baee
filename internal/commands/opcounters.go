package commands

import (
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// serverStatus's opcounters follow mongod: find counts one query and
// getMore one getmore as they start; insert counts the documents it
// inserted, update and delete each statement they ran, and bulkWrite
// each of its operations so, once they are done; every other command
// (findAndModify, aggregate, count, ...) counts one command as it starts.

type opCounters struct {
	insert, query, update, delete, getmore, command atomic.Int64
}

// countStart counts a command as it starts; the writes count when done.
func (h *Handler) countStart(name string) {
	switch name {
	case "insert", "update", "delete", "bulkWrite":
	case "find":
		h.opCounts.query.Add(1)
	case "getMore":
		h.opCounts.getmore.Add(1)
	default:
		h.opCounts.command.Add(1)
	}
}

// countWrites counts what an insert, update or delete command ran.
func (h *Handler) countWrites(r *request, reply bson.D, err error) {
	if err != nil {
		return
	}
	switch r.name {
	case "insert":
		h.opCounts.insert.Add(int64(asInt32(reply, "n")))
	case "update":
		h.opCounts.update.Add(statementsRun(r, "updates", reply))
	case "delete":
		h.opCounts.delete.Add(statementsRun(r, "deletes", reply))
	}
}

// statementsRun is how many of the command's statements ran: all of them,
// or in an ordered command those up to its first error.
func statementsRun(r *request, field string, reply bson.D) int64 {
	v, _ := bsonutil.Field(r.body, field)
	stmts, _ := v.(bson.A)
	ran := int64(len(stmts))
	if ordered, err := orderedArg(r); err != nil || !ordered {
		return ran
	}
	if i, failed := firstErrorIndex(reply, "writeErrors", "index"); failed {
		ran = min(ran, i+1)
	}
	return ran
}

// firstErrorIndex reads the position of the first error a reply's list
// holds (writeErrors by index, bulkWrite's items by idx).
func firstErrorIndex(reply bson.D, list, key string) (int64, bool) {
	v, _ := bsonutil.Field(reply, list)
	items, _ := v.(bson.A)
	for _, item := range items {
		d, _ := item.(bson.D)
		if ok, has := bsonutil.Field(d, "ok"); has && ok != 0.0 {
			continue
		}
		if _, has := bsonutil.Field(d, key); has {
			return int64(asInt32(d, key)), true
		}
	}
	return 0, false
}

// countOps counts a bulkWrite's operations as mongod does: the documents
// inserted, and each update and delete that ran (an ordered bulkWrite
// runs none past its first error).
func (b *bulkWrite) countOps(ops []bson.D) {
	ran := len(ops)
	if i, failed := firstErrorIndex(bson.D{{Key: "items", Value: b.results}}, "items", "idx"); failed && b.ordered {
		ran = min(ran, int(i)+1)
	}
	c := &b.h.opCounts
	c.insert.Add(b.totals.inserted)
	for _, op := range ops[:ran] {
		if len(op) == 0 {
			continue
		}
		switch op[0].Key {
		case "update":
			c.update.Add(1)
		case "delete":
			c.delete.Add(1)
		}
	}
}
