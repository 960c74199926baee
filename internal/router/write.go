package router

import (
	"cmp"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// writeResult gathers the shards' replies to one client write command,
// with every index the client's.
type writeResult struct {
	n, nModified int64
	upserted     bson.A
	writeErrors  []bson.D
	wce          any
	retried      bson.A
	update       bool // an update: nModified is part of the reply
}

// add takes a shard's reply to statements idx (the client's indexes).
func (w *writeResult) add(reply bson.D, idx []int) {
	w.n += toInt64(mustField(reply, "n"))
	w.nModified += toInt64(mustField(reply, "nModified"))
	for _, u := range bsonutil.ToA(mustField(reply, "upserted")) {
		w.upserted = append(w.upserted, reindex(bsonutil.ToD(u), idx))
	}
	for _, we := range bsonutil.ToA(mustField(reply, "writeErrors")) {
		w.writeErrors = append(w.writeErrors, reindex(bsonutil.ToD(we), idx))
	}
	if v, ok := bsonutil.Field(reply, "writeConcernError"); ok && w.wce == nil {
		w.wce = v
	}
	w.retried = append(w.retried, bsonutil.ToA(mustField(reply, "retriedStmtIds"))...)
}

// reindex rewrites a shard's batch position as the client's.
func reindex(d bson.D, idx []int) bson.D {
	i := int(toInt64(mustField(d, "index")))
	if i >= 0 && i < len(idx) {
		d = bsonutil.WithField(d, "index", int32(idx[i]))
	}
	return d
}

// failed records an error for statement i.
func (w *writeResult) failed(i int, err error) {
	w.writeErrors = append(w.writeErrors, mongoerr.WriteError(i, err))
}

func (w *writeResult) reply() bson.D {
	d := bson.D{{Key: "n", Value: int32(w.n)}}
	if w.update {
		if len(w.upserted) > 0 {
			d = append(d, bson.E{Key: "upserted", Value: w.upserted})
		}
		d = append(d, bson.E{Key: "nModified", Value: int32(w.nModified)})
	}
	if len(w.writeErrors) > 0 {
		// Shards answer in their own order; the client reads by index.
		slices.SortStableFunc(w.writeErrors, func(a, b bson.D) int {
			return cmp.Compare(toInt64(mustField(a, "index")), toInt64(mustField(b, "index")))
		})
		arr := make(bson.A, len(w.writeErrors))
		for i, we := range w.writeErrors {
			arr[i] = we
		}
		d = append(d, bson.E{Key: "writeErrors", Value: arr})
	}
	if w.wce != nil {
		d = append(d, bson.E{Key: "writeConcernError", Value: w.wce})
	}
	if len(w.retried) > 0 {
		d = append(d, bson.E{Key: "retriedStmtIds", Value: w.retried})
	}
	return d
}

// staleIndexes returns the statements of a shard's reply that failed
// because the router's version was old (all of them for a top-level
// StaleConfig), and the reply with those errors taken out.
func staleIndexes(reply bson.D, idx []int, ordered bool) ([]int, bson.D) {
	if isStaleCode(wireclient.ReplyCode(reply)) {
		return idx, nil
	}
	var stale []int
	kept := bson.A{}
	for _, we := range bsonutil.ToA(mustField(reply, "writeErrors")) {
		d := bsonutil.ToD(we)
		c, _ := bsonutil.Field(d, "code")
		n, _ := c.(int32)
		if !isStaleCode(mongoerr.Code(n)) {
			kept = append(kept, we)
			continue
		}
		at := int(toInt64(mustField(d, "index")))
		if ordered { // the shard stopped there: the rest did not run
			stale = append(stale, idx[at:]...)
			break
		}
		stale = append(stale, idx[at])
	}
	if len(kept) == 0 {
		return stale, bsonutil.WithoutField(reply, "writeErrors")
	}
	return stale, bsonutil.WithField(reply, "writeErrors", kept)
}

func isStaleCode(c mongoerr.Code) bool {
	return c == mongoerr.StaleConfig || c == mongoerr.StaleDbVersion || c == mongoerr.StaleEpoch
}

// statementIDs are the retryable-write statement ids of a command's n
// statements: stmtIds as given, or stmtId onwards, or 0..n-1.
func statementIDs(body bson.D, n int) bson.A {
	if v, ok := bsonutil.Field(body, "stmtIds"); ok {
		return bsonutil.ToA(v)
	}
	first := int32(0)
	if v, ok := bsonutil.Field(body, "stmtId"); ok {
		first = int32(toInt64(v))
	}
	ids := make(bson.A, n)
	for i := range ids {
		ids[i] = first + int32(i)
	}
	return ids
}

// subBatch is a client write command cut to statements idx for one
// shard: its statements, their stmtIds when retryable, its other fields.
// It is built in one pass with room for what send and call append.
func subBatch(body bson.D, arrayKey string, stmts bson.A, idx []int, ids bson.A) bson.D {
	part := make(bson.A, len(idx))
	for i, at := range idx {
		part[i] = stmts[at]
	}
	cmd := make(bson.D, 0, len(body)+routerAddedFields)
	for _, e := range body {
		switch e.Key {
		case "$db", "$clusterTime", "shardVersion", "databaseVersion", "stmtId", "stmtIds":
			continue
		case arrayKey:
			e.Value = part
		}
		cmd = append(cmd, e)
	}
	if _, retryable := bsonutil.Field(body, "txnNumber"); retryable {
		sub := make(bson.A, len(idx))
		for i, at := range idx {
			sub[i] = ids[at]
		}
		cmd = append(cmd, bson.E{Key: "stmtIds", Value: sub})
	}
	return cmd
}

func orderedArg(body bson.D) bool {
	v, ok := bsonutil.Field(body, "ordered")
	return !ok || bsonutil.TrueValue(v)
}
