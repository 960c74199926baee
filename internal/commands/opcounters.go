package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/opstats"
)

// countWrites counts what an insert, update or delete command ran in
// serverStatus's opcounters (opstats.OpCounters counts the rest).
func (h *Handler) countWrites(r *request, reply bson.D, err error) {
	if err == nil {
		h.opCounts.Done(r.name, r.body, reply)
	}
}

// countOps counts a bulkWrite's operations as mongod does: the documents
// inserted, and each update and delete that ran (an ordered bulkWrite
// runs none past its first error).
func (b *bulkWrite) countOps(ops []bson.D) {
	ran := len(ops)
	if i, failed := opstats.FirstErrorIndex(bson.D{{Key: "items", Value: b.results}}, "items", "idx"); failed && b.ordered {
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
