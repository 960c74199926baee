package router

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// errWithoutShardKey marks a single-document update or delete whose
// filter neither pins the shard key nor names an exact _id: since 7.1
// mongos runs it in two phases (writeWithoutShardKey).
var errWithoutShardKey = errors.New("router: single-document write without the shard key")

// maxTwoPhaseTries bounds how often a write without the shard key looks
// again for a document that changed between its two phases.
const maxTwoPhaseTries = 10

// chosen is the document phase one picked and the shard that owns it.
type chosen struct {
	doc bson.D
	at  target
}

// writeWithoutShardKey runs statement i the 8.0 way
// (write_without_shard_key_util): phase one asks every shard owning a
// chunk for its first match (in the statement's sort, if any) and keeps
// the first in that order; phase two sends the write to that shard alone
// with the document's _id added to the filter. A document that changed in
// between no longer matches, and phase one runs again (outside a
// retryable write, see retryable). mongos holds both phases in an
// internal transaction; this router has none, so a retry is how a
// concurrent change is met. It reports a stale answer as sendStatement
// does.
func (r *Router) writeWithoutShardKey(op *operation, p placement, kind writeKind, stmts, ids bson.A, i int, res *writeResult) (bool, error) {
	stmt := bsonutil.ToD(stmts[i])
	for try := 0; try < maxTwoPhaseTries; try++ {
		pick, err := r.firstMatch(op, p, stmt, stmtSort(stmt))
		if errors.Is(err, errStale) {
			return true, nil
		}
		if err != nil || pick == nil {
			if err == nil {
				res.add(bson.D{{Key: "n", Value: int32(0)}, {Key: "nModified", Value: int32(0)}}, []int{i})
			}
			return false, err
		}
		narrowed := append(bson.A(nil), stmts...)
		narrowed[i] = withIDFilter(stmt, "q", pick.doc)
		reply, stale, err := r.sendOneStatement(op, pick.at, kind, narrowed, ids, i)
		if err != nil || stale {
			return stale, err
		}
		if toInt64(mustField(reply, "n")) == 0 && len(bsonutil.ToA(mustField(reply, "writeErrors"))) == 0 && !retryable(op) {
			continue // the document changed since phase one
		}
		return false, r.takeStatementReply(op, p, pick.at, reply, ids[i], i, res)
	}
	res.add(bson.D{{Key: "n", Value: int32(0)}, {Key: "nModified", Value: int32(0)}}, []int{i})
	return false, nil
}

// retryable reports a retryable write. Its shard records a statement's
// outcome, n: 0 included, by stmtId: sent again, the statement would get
// that record back, so a document that changed between the phases ends
// it with n: 0 instead of a second search.
func retryable(op *operation) bool {
	_, ok := bsonutil.Field(op.body, "txnNumber")
	return ok
}

// firstMatch is phase one: each targeted shard's first document matching
// the statement's filter (in sort order), the first of them in that order.
func (r *Router) firstMatch(op *operation, p placement, stmt, sortSpec bson.D) (*chosen, error) {
	ts, err := r.targets(op, p, nil)
	if err != nil {
		return nil, err
	}
	order, err := phaseOneSort(sortSpec, stmt)
	if err != nil {
		return nil, err
	}
	docs := make([]bson.D, len(ts))
	err = r.fanOut(op, len(ts), func(sub *operation, i int) error {
		var err error
		docs[i], err = r.shardFirstMatch(sub, p, ts[i], stmt, sortSpec)
		return err
	})
	if err != nil {
		return nil, err
	}
	var best *chosen
	for i, doc := range docs {
		if doc == nil {
			continue
		}
		if best == nil || (order != nil && order.Compare(doc, best.doc) < 0) {
			best = &chosen{doc: doc, at: ts[i]}
		}
		if order == nil {
			break // any match serves
		}
	}
	return best, nil
}

// shardFirstMatch asks one shard for its first match, as mongos's
// _clusterQueryWithoutShardKey does.
func (r *Router) shardFirstMatch(op *operation, p placement, t target, stmt, sortSpec bson.D) (bson.D, error) {
	_, coll := splitNS(p.ns)
	q, _ := bsonutil.Field(stmt, "q")
	if q == nil {
		q, _ = bsonutil.Field(stmt, "query")
	}
	find := bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: q}, {Key: "limit", Value: int64(1)}, {Key: "singleBatch", Value: true}}
	if len(sortSpec) > 0 {
		find = append(find, bson.E{Key: "sort", Value: sortSpec})
	}
	for _, name := range []string{"collation", "hint"} {
		if v, ok := bsonutil.Field(stmt, name); ok {
			find = append(find, bson.E{Key: name, Value: v})
		}
	}
	if v, ok := bsonutil.Field(op.body, "let"); ok {
		find = append(find, bson.E{Key: "let", Value: v})
	}
	reply, err := r.sendOK(op, t, find)
	if err != nil {
		return nil, err
	}
	batch := bsonutil.ToA(mustField(bsonutil.ToD(mustField(reply, "cursor")), "firstBatch"))
	if len(batch) == 0 {
		return nil, nil
	}
	return bsonutil.ToD(batch[0]), nil
}

// phaseOneSort compares the shards' candidates under the statement's
// sort and collation; nil when it has no sort.
func phaseOneSort(sortSpec, stmt bson.D) (*query.Sort, error) {
	if len(sortSpec) == 0 {
		return nil, nil
	}
	s, err := query.NewSort(sortSpec)
	if err != nil {
		return nil, err
	}
	c, err := collatorOf(stmt)
	if err != nil || c == nil {
		return s, err
	}
	return s.WithCollation(c), nil
}

// stmtSort is an update statement's sort (8.0) or findAndModify's.
func stmtSort(stmt bson.D) bson.D {
	v, _ := bsonutil.Field(stmt, "sort")
	d, _ := v.(bson.D)
	return d
}

// withIDFilter is stmt with its filter (field key) narrowed to the
// chosen document's _id: the shard writes it only if it still matches.
func withIDFilter(stmt bson.D, key string, doc bson.D) bson.D {
	q, _ := bsonutil.Field(stmt, key)
	id, _ := bsonutil.Field(doc, "_id")
	narrowed := bson.D{{Key: "$and", Value: bson.A{q, bson.D{{Key: "_id", Value: id}}}}}
	return bsonutil.WithField(stmt, key, narrowed)
}

// takeStatementReply adds a shard's answer to statement i (stmtId
// stmt), first moving the document when the shard answered
// WouldChangeOwningShard.
func (r *Router) takeStatementReply(op *operation, p placement, from target, reply bson.D, stmt any, i int, res *writeResult) error {
	wes := bsonutil.ToA(mustField(reply, "writeErrors"))
	if len(wes) != 1 || codeOf(bsonutil.ToD(wes[0])) != mongoerr.WouldChangeOwningShard {
		res.add(reply, []int{i})
		return nil
	}
	moved, err := r.changeOwningShard(op, p, from, bsonutil.ToD(wes[0]), stmt)
	if err != nil {
		res.failed(i, err)
		return nil
	}
	res.add(moved.updateReply(), []int{i})
	return nil
}

func codeOf(d bson.D) mongoerr.Code {
	c, _ := bsonutil.Field(d, "code")
	n, _ := c.(int32)
	return mongoerr.Code(n)
}

// findAndModifyWithoutShardKey is writeWithoutShardKey for findAndModify:
// the first match in the command's sort, then the command on its shard
// with the _id added to the query.
func (r *Router) findAndModifyWithoutShardKey(op *operation, p placement) (bson.D, error) {
	for try := 0; try < maxTwoPhaseTries; try++ {
		pick, err := r.firstMatch(op, p, op.body, stmtSort(op.body))
		if err != nil {
			return nil, err
		}
		if pick == nil {
			break
		}
		reply, err := r.findAndModifyOn(op, p, pick.at, withIDFilter(passThrough(op.body), "query", pick.doc))
		if err != nil || wireclient.ReplyCode(reply) != 0 {
			return reply, err
		}
		last := bsonutil.ToD(mustField(reply, "lastErrorObject"))
		if toInt64(mustField(last, "n")) > 0 || retryable(op) {
			return reply, nil
		}
	}
	return bson.D{{Key: "lastErrorObject", Value: bson.D{{Key: "n", Value: int32(0)}, {Key: "updatedExisting", Value: false}}},
		{Key: "value", Value: nil}}, nil
}

// findAndModifyOn runs findAndModify on t, moving the document when the
// shard answers WouldChangeOwningShard.
func (r *Router) findAndModifyOn(op *operation, p placement, t target, cmd bson.D) (bson.D, error) {
	reply, err := r.send(op, t, cmd)
	if err != nil {
		return nil, err
	}
	if wireclient.ReplyCode(reply) != mongoerr.WouldChangeOwningShard {
		return forwardable(reply), nil
	}
	moved, err := r.changeOwningShard(op, p, t, reply, statementIDs(op.body, 1)[0])
	if err != nil {
		return nil, err
	}
	return moved.findAndModifyReply(op.body), nil
}
