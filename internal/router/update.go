package router

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// writeKind describes update and delete for the statement loop.
type writeKind struct {
	arrayKey string // "updates" or "deletes"
	update   bool
}

func cmdUpdate(r *Router, op *operation) (bson.D, error) {
	return r.routeStatements(op, writeKind{arrayKey: "updates", update: true})
}

func cmdDelete(r *Router, op *operation) (bson.D, error) {
	return r.routeStatements(op, writeKind{arrayKey: "deletes"})
}

// routeStatements sends each update or delete statement to the shards
// its filter's shard key targets, in order, stopping an ordered batch at
// its first error.
func (r *Router) routeStatements(op *operation, kind writeKind) (bson.D, error) {
	coll, err := collectionArg(op)
	if err != nil {
		return nil, err
	}
	ns := op.db + "." + coll
	stmts := bsonutil.ToA(mustField(op.body, kind.arrayKey))
	ids := statementIDs(op.body, len(stmts))
	ordered := orderedArg(op.body)
	res := &writeResult{update: kind.update}
	for i := range stmts {
		if err := r.routeStatement(op, ns, kind, stmts, ids, i, res); err != nil {
			return nil, err
		}
		if ordered && len(res.writeErrors) > 0 {
			break
		}
	}
	return res.reply(), nil
}

// routeStatement runs statement i, refreshing and retrying while a shard
// answers StaleConfig.
func (r *Router) routeStatement(op *operation, ns string, kind writeKind, stmts, ids bson.A, i int, res *writeResult) error {
	for attempt := 0; attempt < maxStaleRetries; attempt++ {
		if attempt > 0 {
			r.catalog.invalidate(ns)
		}
		p, err := r.place(op, ns, true)
		if err != nil {
			return err
		}
		ts, err := r.statementTargets(op, p, kind, bsonutil.ToD(stmts[i]))
		var stale bool
		switch {
		case errors.Is(err, errWithoutShardKey):
			stale, err = r.writeWithoutShardKey(op, p, kind, stmts, ids, i, res)
		case err != nil:
			res.failed(i, err)
			return nil
		default:
			stale, err = r.sendStatement(op, p, ts, kind, stmts, ids, i, res)
		}
		if err != nil || !stale {
			return err
		}
	}
	res.failed(i, mongoerr.Newf(mongoerr.StaleConfig, "routing information for %s is still stale after %d refreshes", ns, maxStaleRetries))
	return nil
}

// sendStatement sends statement i to its targets; it reports a stale
// answer before any target has applied it.
func (r *Router) sendStatement(op *operation, p placement, ts []target, kind writeKind, stmts, ids bson.A, i int, res *writeResult) (bool, error) {
	for _, t := range ts {
		reply, stale, err := r.sendOneStatement(op, t, kind, stmts, ids, i)
		if err != nil || stale {
			return stale, err
		}
		if err := r.takeStatementReply(op, p, t, reply, ids[i], i, res); err != nil {
			return false, err
		}
	}
	return false, nil
}

// sendOneStatement sends statement i to t: its reply, or stale when t
// answered that the router's version is old, or the command's error.
func (r *Router) sendOneStatement(op *operation, t target, kind writeKind, stmts, ids bson.A, i int) (reply bson.D, stale bool, err error) {
	reply, err = r.call(op, t.rs, t.db, append(subBatch(op.body, kind.arrayKey, stmts, []int{i}, ids), t.version...))
	if err != nil {
		return nil, false, err
	}
	if staleAt, _ := staleIndexes(reply, []int{i}, true); len(staleAt) > 0 {
		return nil, true, nil
	}
	return reply, false, wireclient.MongoError(reply)
}

// statementTargets applies mongos's rules: a statement whose filter pins
// the shard key goes to that shard; a multi-document one, or one with an
// exact _id, to every shard; an upsert needs the shard key; any other
// single-document write is errWithoutShardKey, for the two-phase path.
func (r *Router) statementTargets(op *operation, p placement, kind writeKind, stmt bson.D) ([]target, error) {
	if p.table == nil {
		return r.targets(op, p, nil)
	}
	q := bsonutil.ToD(mustField(stmt, "q"))
	keys := shardKeyValues(p.table, q, simpleCollation(stmt))
	if len(keys) == 1 {
		return r.targets(op, p, keys)
	}
	if upsert, _ := bsonutil.Field(stmt, "upsert"); bsonutil.TrueValue(upsert) {
		return nil, mongoerr.Newf(mongoerr.ShardKeyNotFound, "Failed to target upsert by query :: could not extract exact shard key")
	}
	if isMulti(stmt, kind) || exactID(q) {
		return r.targets(op, p, keys)
	}
	return nil, errWithoutShardKey
}

// isMulti: an update's multi: true, a delete's limit: 0.
func isMulti(stmt bson.D, kind writeKind) bool {
	if kind.update {
		v, _ := bsonutil.Field(stmt, "multi")
		return bsonutil.TrueValue(v)
	}
	v, ok := bsonutil.Field(stmt, "limit")
	return ok && toInt64(v) == 0
}

// exactID reports a filter with equality on _id.
func exactID(q bson.D) bool {
	v, ok := bsonutil.Field(q, "_id")
	return ok && len(equalityValues(v)) == 1
}

// cmdFindAndModify sends the command to the shard its query's shard key
// pins; without it, in two phases (findAndModifyWithoutShardKey). An
// upsert needs the key.
func cmdFindAndModify(r *Router, op *operation) (bson.D, error) {
	coll, err := collectionArg(op)
	if err != nil {
		return nil, err
	}
	ns := op.db + "." + coll
	p, err := r.place(op, ns, true)
	if err != nil {
		return nil, err
	}
	var keys []any
	if p.table != nil {
		keys = shardKeyValues(p.table, bsonutil.ToD(mustField(op.body, "query")), simpleCollation(op.body))
		if len(keys) != 1 {
			if upsert, _ := bsonutil.Field(op.body, "upsert"); bsonutil.TrueValue(upsert) {
				return nil, mongoerr.Newf(mongoerr.ShardKeyNotFound, "Query for sharded findAndModify must contain the shard key")
			}
			return r.findAndModifyWithoutShardKey(op, p)
		}
	}
	ts, err := r.targets(op, p, keys)
	if err != nil {
		return nil, err
	}
	return r.findAndModifyOn(op, p, ts[0], passThrough(op.body))
}
