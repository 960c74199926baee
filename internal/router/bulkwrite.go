package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// The client bulkWrite of 8.0 (drivers' client.bulkWrite), routed as
// mongos's bulk_write_exec does: each op is targeted within its own
// namespace (nsInfo), the ops bound for one shard go to it as one
// bulkWrite with its own nsInfo (the entries its ops use, each with its
// routing versions) and the statement ids of the client's op indexes,
// and the shards' per-op results come back mapped to the client's
// indexes. Ordered, the ops go in runs of consecutive ops of one shard
// and stop at the first error; unordered, every shard gets all its ops
// at once. A single-document update or delete without the shard key, and
// an update a shard answers WouldChangeOwningShard, runs alone as the
// update or delete command's statement does (update.go), two phases and
// document moves included.

// bulkNS is the namespace of the router's reply cursor, as mongos's
// NamespaceString::makeBulkWriteNSS.
const bulkNS = "admin.$cmd.bulkWrite"

// bulkRoute is one client bulkWrite on its way through the router.
type bulkRoute struct {
	r          *Router
	op         *operation
	ops        []bson.D // the client's ops, inserts given an _id
	ns         []string // nsInfo's namespaces
	ids        bson.A   // the ops' statement ids
	ordered    bool
	errorsOnly bool
	items      map[int]bson.D // each finished op's result, by client index
	wce        any            // the first shard's writeConcernError
}

func cmdBulkWrite(r *Router, op *operation) (bson.D, error) {
	b, err := newBulkRoute(r, op)
	if err != nil {
		return nil, err
	}
	if err := b.run(); err != nil {
		return nil, err
	}
	return b.reply()
}

func newBulkRoute(r *Router, op *operation) (*bulkRoute, error) {
	ops, err := arrayOfDocs(op.body, "ops")
	if err != nil {
		return nil, err
	}
	nsInfo, err := arrayOfDocs(op.body, "nsInfo")
	if err != nil {
		return nil, err
	}
	b := &bulkRoute{r: r, op: op, ops: withInsertIDs(ops), ordered: orderedArg(op.body), items: map[int]bson.D{}}
	errorsOnly, _ := bsonutil.Field(op.body, "errorsOnly")
	b.errorsOnly = bsonutil.TrueValue(errorsOnly)
	b.ids = statementIDs(op.body, len(ops))
	for _, entry := range nsInfo {
		ns, ok := mustField(entry, "ns").(string)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field 'bulkWrite.nsInfo.ns' is the wrong type '%s', expected type 'string'",
				bsonutil.TypeName(mustField(entry, "ns")))
		}
		b.ns = append(b.ns, ns)
	}
	return b, nil
}

// arrayOfDocs reads a required array field of documents.
func arrayOfDocs(body bson.D, key string) ([]bson.D, error) {
	v, ok := bsonutil.Field(body, key)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40414, "BSON field 'bulkWrite.%s' is missing but a required field", key)
	}
	arr, isArray := v.(bson.A)
	if !isArray {
		return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field 'bulkWrite.%s' is the wrong type '%s', expected type 'array'", key, bsonutil.TypeName(v))
	}
	out := make([]bson.D, len(arr))
	for i, el := range arr {
		d, isDoc := el.(bson.D)
		if !isDoc {
			return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field 'bulkWrite.%s' is the wrong type '%s', expected type 'object'", key, bsonutil.TypeName(el))
		}
		out[i] = d
	}
	return out, nil
}

// withInsertIDs gives each insert op's document without an _id a new
// ObjectId, as mongos's addIdsForInserts: the shard key may be _id.
func withInsertIDs(ops []bson.D) []bson.D {
	out := make([]bson.D, len(ops))
	for i, op := range ops {
		out[i] = op
		doc, isDoc := mustField(op, "document").(bson.D)
		if opKind(op) != "insert" || !isDoc {
			continue
		}
		if _, ok := bsonutil.Field(doc, "_id"); !ok {
			out[i] = bsonutil.WithField(op, "document", append(bson.D{{Key: "_id", Value: bson.NewObjectID()}}, doc...))
		}
	}
	return out
}

// opKind is an op's kind: its first field's name ("" when empty).
func opKind(op bson.D) string {
	if len(op) == 0 {
		return ""
	}
	return op[0].Key
}

// namespaceOf is op i's namespace; an error when its nsInfo index or
// kind is not one the shards could run, with mongod's messages.
func (b *bulkRoute) namespaceOf(i int) (string, error) {
	op := b.ops[i]
	switch opKind(op) {
	case "insert", "update", "delete":
	case "":
		return "", mongoerr.New(mongoerr.FailedToParse, "Unrecognized bulkWrite operation")
	default:
		return "", mongoerr.Newf(mongoerr.FailedToParse, "Unrecognized bulkWrite operation: %s", opKind(op))
	}
	if !bsonutil.IsNumber(op[0].Value) {
		return "", mongoerr.New(mongoerr.TypeMismatch, "bulkWrite operation's namespace index must be a number")
	}
	at := int(toInt64(op[0].Value))
	if at < 0 || at >= len(b.ns) {
		return "", mongoerr.Newf(mongoerr.BadValue, "BulkWrite ops entry %d has an invalid nsInfo index.", at)
	}
	if _, coll := splitNS(b.ns[at]); coll == "" {
		return "", mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", b.ns[at])
	}
	return b.ns[at], nil
}

// bulkStatement is an update or delete op as the update or delete
// command's statement, which the router targets.
func bulkStatement(op bson.D) (bson.D, writeKind) {
	stmt := make(bson.D, 0, len(op))
	multi := false
	for _, e := range op[1:] {
		switch e.Key {
		case "filter":
			e.Key = "q"
		case "updateMods":
			e.Key = "u"
		case "multi":
			multi = bsonutil.TrueValue(e.Value)
			if opKind(op) == "delete" {
				continue // a delete statement says limit
			}
		}
		stmt = append(stmt, e)
	}
	if opKind(op) == "update" {
		return stmt, writeKind{arrayKey: "updates", update: true}
	}
	limit := int32(1)
	if multi {
		limit = 0
	}
	return append(stmt, bson.E{Key: "limit", Value: limit}), writeKind{arrayKey: "deletes"}
}

func (b *bulkRoute) failed(i int, err error) {
	b.items[i] = mongoerr.BulkWriteItem(i, opKind(b.ops[i]), err)
}
