package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// countWrites counts what an insert, update or delete command ran in
// serverStatus's opcounters (opstats.OpCounters counts the rest).
func (h *Handler) countWrites(r *request, reply bson.D, err error) {
	if err != nil {
		return
	}
	switch r.name {
	case "insert":
		h.opCounts.Insert.Add(int64(asInt32(reply, "n")))
	case "update":
		h.opCounts.Update.Add(statementsRun(r, "updates", reply))
	case "delete":
		h.opCounts.Delete.Add(statementsRun(r, "deletes", reply))
	}
}

// statementsRun is how many of the command's statements ran: all of them,
// or in an ordered command those up to its first error.
func statementsRun(r *request, field string, reply bson.D) int64 {
	v, _ := bsonutil.Field(r.body, field)
	stmts, _ := v.(bson.A)
	ran := int64(len(stmts))
	if i, failed := firstErrorIndex(reply, "writeErrors", "index"); failed { // else ordered is moot
		if ordered, err := orderedArg(r); err == nil && ordered {
			ran = min(ran, i+1)
		}
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
	c.Insert.Add(b.totals.inserted)
	for _, op := range ops[:ran] {
		if len(op) == 0 {
			continue
		}
		switch op[0].Key {
		case "update":
			c.Update.Add(1)
		case "delete":
			c.Delete.Add(1)
		}
	}
}
