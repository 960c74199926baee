package router

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmerge"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// subCommand is the bulkWrite a shard gets for its batch: the batch's
// ops with their nsInfo indexes renumbered into its own nsInfo, whose
// entries carry the routing versions, and the ops' statement ids. The
// shard always answers every op (errorsOnly is the router's to apply):
// the router needs each op's result to merge and to count.
func (b *bulkRoute) subCommand(batch *shardBatch) bson.D {
	at := map[string]int32{}
	nsInfo := bson.A{}
	ops := make(bson.A, len(batch.idx))
	for k, i := range batch.idx {
		ns, _ := b.namespaceOf(i)
		n, ok := at[ns]
		if !ok {
			n = int32(len(nsInfo))
			at[ns] = n
			nsInfo = append(nsInfo, append(bson.D{{Key: "ns", Value: ns}}, batch.versions[ns]...))
		}
		ops[k] = append(bson.D{{Key: opKind(b.ops[i]), Value: n}}, b.ops[i][1:]...)
	}
	cmd := passThrough(b.op.body)
	for _, key := range []string{"stmtId", "stmtIds", "errorsOnly", "cursor"} {
		cmd = bsonutil.WithoutField(cmd, key)
	}
	cmd = bsonutil.WithField(bsonutil.WithField(cmd, "ops", ops), "nsInfo", nsInfo)
	if retryable(b.op) {
		ids := make(bson.A, len(batch.idx))
		for k, i := range batch.idx {
			ids[k] = b.ids[i]
		}
		cmd = append(cmd, bson.E{Key: "stmtIds", Value: ids})
	}
	return cmd
}

// take notes what became of each op of a shard's batch, from its reply.
func (b *bulkRoute) take(batch *shardBatch, reply bson.D, rd *round) {
	if code := wireclient.ReplyCode(reply); code != 0 {
		b.batchFailed(batch, rd, wireclient.MongoError(reply))
		return
	}
	if v, ok := bsonutil.Field(reply, "writeConcernError"); ok && b.wce == nil {
		b.wce = v
	}
	answered := map[int]bool{}
	cur := bsonutil.ToD(mustField(reply, "cursor"))
	for _, raw := range bsonutil.ToA(mustField(cur, "firstBatch")) {
		item := bsonutil.ToD(raw)
		local := int(toInt64(mustField(item, "idx")))
		if local < 0 || local >= len(batch.idx) {
			continue
		}
		i := batch.idx[local]
		answered[i] = true
		rd.note(i, bsonutil.WithField(item, "idx", int32(i)))
	}
	if !b.ordered { // an unordered shard stops only when stale
		for _, i := range batch.idx {
			if !answered[i] {
				rd.stale[i] = true
			}
		}
	}
}

// note keeps a shard's result for op i: a stale one sends the op again,
// WouldChangeOwningShard runs it alone (the shard wrote nothing), and
// the results of an op sent to several shards are merged.
func (rd *round) note(i int, item bson.D) {
	switch code := codeOf(item); {
	case isStaleCode(code):
		rd.stale[i] = true
	case code == mongoerr.WouldChangeOwningShard:
		rd.alone = append(rd.alone, i)
	default:
		rd.got[i] = shardmerge.MergeBulkItems(rd.got[i], item)
	}
}

// batchFailed takes a shard's refusal of its whole batch: stale, every
// op goes again; otherwise, as mongos's noteChildBatchError, the error is
// the first op's when ordered (the rest never ran), every op's when not.
func (b *bulkRoute) batchFailed(batch *shardBatch, rd *round, err error) {
	if isStaleCode(mongoerr.As(err).Code) {
		for _, i := range batch.idx {
			rd.stale[i] = true
		}
		return
	}
	idx := batch.idx
	if b.ordered {
		idx = idx[:1]
	}
	for _, i := range idx {
		rd.got[i] = shardmerge.MergeBulkItems(rd.got[i], mongoerr.BulkWriteItem(i, opKind(b.ops[i]), err))
	}
}

// runAlone runs each op as the update or delete command's statement.
func (b *bulkRoute) runAlone(alone []int) error {
	for _, i := range alone {
		item, err := b.runStatement(i)
		if err != nil {
			return err
		}
		b.items[i] = item
	}
	return nil
}

// runStatement runs op i through the update or delete command's routing
// (update.go): two phases without the shard key, a document moved when
// its shard key changes shards, StaleConfig refreshed; its statement id
// stays the op's.
func (b *bulkRoute) runStatement(i int) (bson.D, error) {
	ns, _ := b.namespaceOf(i)
	db, coll := splitNS(ns)
	stmt, kind := bulkStatement(b.ops[i])
	name := opKind(b.ops[i])
	body := bson.D{{Key: name, Value: coll}, {Key: kind.arrayKey, Value: bson.A{stmt}}, {Key: "ordered", Value: true}}
	for _, key := range []string{"let", "bypassDocumentValidation", "comment", "lsid", "txnNumber", "writeConcern", "maxTimeMS"} {
		if v, ok := bsonutil.Field(b.op.body, key); ok {
			body = append(body, bson.E{Key: key, Value: v})
		}
	}
	if retryable(b.op) {
		body = append(body, bson.E{Key: "stmtIds", Value: bson.A{b.ids[i]}})
	}
	sub := &operation{ctx: b.op.ctx, conn: b.op.conn, db: db, name: name, body: body}
	reply, err := b.r.routeStatements(sub, kind)
	if b.op.opTime.Compare(sub.opTime) < 0 {
		b.op.opTime = sub.opTime
	}
	if err != nil {
		return nil, err
	}
	if v, ok := bsonutil.Field(reply, "writeConcernError"); ok && b.wce == nil {
		b.wce = v
	}
	return shardmerge.StatementItem(i, name, reply), nil
}

// reply is the client's answer: the results in op order (the failed
// ones only, with errorsOnly) in a cursor, and the counters.
func (b *bulkRoute) reply() (bson.D, error) {
	var t shardmerge.BulkTotals
	var results []bson.D
	for i := range b.ops {
		item, done := b.items[i]
		if !done {
			continue
		}
		t.Count(opKind(b.ops[i]), item)
		if !b.errorsOnly || !shardmerge.BulkItemOK(item) {
			results = append(results, item)
		}
	}
	cursor, err := b.resultCursor(results)
	if err != nil {
		return nil, err
	}
	out := append(cursor, t.Fields()...)
	if b.wce != nil {
		out = append(out, bson.E{Key: "writeConcernError", Value: b.wce})
	}
	return out, nil
}

// resultCursor answers the results in the first batch when they fit the
// client's cursor.batchSize and 16 MB; otherwise the rest wait in a
// router cursor, as mongos's queued-data cursor.
func (b *bulkRoute) resultCursor(results []bson.D) (bson.D, error) {
	limit := int64(math.MaxInt64)
	if c, ok := mustField(b.op.body, "cursor").(bson.D); ok {
		if v, ok := bsonutil.Field(c, "batchSize"); ok {
			limit = toInt64(v)
		}
	}
	if int64(len(results)) <= limit && resultBytes(results) <= maxBatchBytes {
		batch := make(bson.A, len(results))
		for k, item := range results {
			batch[k] = item
		}
		return cursorReply(bulkNS, 0, "firstBatch", batch), nil
	}
	return b.r.firstBatch(b.op, bulkNS, &mergedCursor{out: aggregate.Docs(results...)}, limit, false)
}

func resultBytes(results []bson.D) int {
	total := 0
	for _, item := range results {
		total += docSize(item)
	}
	return total
}
