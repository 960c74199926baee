package opstats

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// Done counts what an insert, update or delete command ran, from its
// command and its reply, once it succeeded: the documents inserted, and
// each update and delete statement that ran (an ordered command runs
// none past its first error). Other commands counted as they started.
func (c *OpCounters) Done(name string, body, reply bson.D) {
	switch name {
	case "insert":
		c.Insert.Add(int64(int32Field(reply, "n")))
	case "update":
		c.Update.Add(statementsRun(body, "updates", reply))
	case "delete":
		c.Delete.Add(statementsRun(body, "deletes", reply))
	}
}

// statementsRun is how many of the command's statements ran: all of
// them, or in an ordered command those up to its first error.
func statementsRun(body bson.D, field string, reply bson.D) int64 {
	v, _ := bsonutil.Field(body, field)
	stmts, _ := v.(bson.A)
	ran := int64(len(stmts))
	if i, failed := FirstErrorIndex(reply, "writeErrors", "index"); failed {
		if ordered, isBool := orderedField(body); isBool && ordered {
			ran = min(ran, i+1)
		}
	}
	return ran
}

// orderedField is the command's ordered flag: true when absent, as the
// command reads it; isBool is false for a value the command refused.
func orderedField(body bson.D) (ordered, isBool bool) {
	v, ok := bsonutil.Field(body, "ordered")
	if !ok {
		return true, true
	}
	ordered, isBool = v.(bool)
	return ordered, isBool
}

// FirstErrorIndex reads the position of the first error a reply's list
// holds (writeErrors by index, bulkWrite's items by idx).
func FirstErrorIndex(reply bson.D, list, key string) (int64, bool) {
	v, _ := bsonutil.Field(reply, list)
	items, _ := v.(bson.A)
	for _, item := range items {
		d, _ := item.(bson.D)
		if ok, has := bsonutil.Field(d, "ok"); has && ok != 0.0 {
			continue
		}
		if _, has := bsonutil.Field(d, key); has {
			return int64(int32Field(d, key)), true
		}
	}
	return 0, false
}

func int32Field(d bson.D, key string) int32 {
	v, _ := bsonutil.Field(d, key)
	n, _ := v.(int32)
	return n
}
