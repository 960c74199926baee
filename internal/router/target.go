package router

import (
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardkey"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// maxStaleRetries is mongos's kMaxNumStaleVersionRetries.
const maxStaleRetries = 10

// placement is where a collection lives as the router knows it now.
type placement struct {
	ns    string
	table *shardmeta.RoutingTable // nil: unsharded
	db    shardmeta.Database
	found bool // the database exists
}

// target is one shard a command goes to, with the version it carries.
type target struct {
	shard   string
	rs      *wireclient.ReplicaSet
	db      string // the collection's database (an admin command names another)
	version bson.D // shardVersion and, unsharded, databaseVersion
}

// place finds a collection's placement; create makes its database when
// there is none (a write's first use of a database).
func (r *Router) place(op *operation, ns string, create bool) (placement, error) {
	db, _ := splitNS(ns)
	d, found, err := r.catalog.database(op, db, create)
	if err != nil {
		return placement{}, err
	}
	p := placement{ns: ns, db: d, found: found}
	if !found {
		return p, nil
	}
	p.table, err = r.catalog.routing(op, ns)
	return p, err
}

// targets returns the shards that may hold documents whose shard key
// takes one of keys (nil: any value).
func (r *Router) targets(op *operation, p placement, keys []any) ([]target, error) {
	if !p.found {
		ids, err := r.catalog.shardIDs(op)
		if err != nil || len(ids) == 0 {
			return nil, orNoShards(err)
		}
		return r.resolve(op, p, ids[:1]) // nothing to find: any shard answers empty
	}
	if p.table == nil {
		return r.resolve(op, p, []string{p.db.Primary})
	}
	if keys == nil {
		return r.resolve(op, p, p.table.AllShards())
	}
	seen := map[string]bool{}
	var ids []string
	for _, k := range keys {
		id, err := shardForValue(p.table, k)
		if err != nil {
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return r.resolve(op, p, ids)
}

func orNoShards(err error) error {
	if err != nil {
		return err
	}
	return mongoerr.New(mongoerr.ShardNotFound, "No shards found")
}

// shardForValue is the shard owning a value of a single hashed key.
func shardForValue(t *shardmeta.RoutingTable, v any) (string, error) {
	h, err := shardkey.Hash(v)
	if err != nil {
		return "", err
	}
	c, ok := t.ChunkForHash(h)
	if !ok {
		return "", mongoerr.Newf(mongoerr.InvalidOptions, "shard key %s is not a single hashed field", t.Pattern())
	}
	return c.Shard, nil
}

// resolve turns shard ids into targets with their versions.
func (r *Router) resolve(op *operation, p placement, ids []string) ([]target, error) {
	out := make([]target, 0, len(ids))
	for _, id := range ids {
		rs, err := r.catalog.shard(op, id)
		if err != nil && p.table != nil && mongoerr.As(err).Code == mongoerr.ShardNotFound {
			// A cached table naming a removed shard is old: its chunks
			// have moved since (removeShard drains them first).
			return nil, fmt.Errorf("%w: %v", errStale, err)
		}
		if err != nil {
			return nil, err
		}
		db, _ := splitNS(p.ns)
		out = append(out, target{shard: id, rs: rs, db: db, version: versionFields(p, id)})
	}
	return out, nil
}

// versionFields are what a routed command carries (sharding.md §4.1):
// the shard's version of a sharded collection, or UNSHARDED and the
// database's version.
func versionFields(p placement, shard string) bson.D {
	if !p.found {
		return nil
	}
	if p.table != nil {
		return bson.D{{Key: "shardVersion", Value: p.table.ShardVersion(shard).Doc()}}
	}
	return bson.D{
		{Key: "shardVersion", Value: shardmeta.Unsharded.Doc()},
		{Key: "databaseVersion", Value: bson.D{
			{Key: "uuid", Value: p.db.Version.UUID},
			{Key: "timestamp", Value: p.db.Version.Timestamp},
			{Key: "lastMod", Value: p.db.Version.LastMod},
		}},
	}
}

// shardKeyValues returns the values a filter's equality on the hashed
// shard key field allows ({f: v}, {f: {$eq: v}}, {f: {$in: [...]}},
// within $and), or nil when it does not pin the field. Strings pin it
// only under the simple collation, which hashes them as they are.
func shardKeyValues(t *shardmeta.RoutingTable, filter bson.D, simpleCollation bool) []any {
	field, ok := t.Pattern().HashedField()
	if !ok || !t.Pattern().IsSingleHashed() {
		return nil
	}
	vals := fieldValues(filter, field)
	for _, v := range vals {
		if !simpleCollation && bsonutil.HoldsString(v) {
			return nil
		}
	}
	return vals
}

func fieldValues(filter bson.D, field string) []any {
	for _, e := range filter {
		switch {
		case e.Key == field:
			return equalityValues(e.Value)
		case e.Key == "$and":
			for _, clause := range bsonutil.ToA(e.Value) {
				if vals := fieldValues(bsonutil.ToD(clause), field); vals != nil {
					return vals
				}
			}
		}
	}
	return nil
}

// equalityValues reads a field's condition as the values it can equal.
func equalityValues(v any) []any {
	switch x := v.(type) {
	case bson.A, bson.Regex:
		return nil // may match array elements, or a pattern
	case bson.D:
		if len(x) == 0 || len(x[0].Key) == 0 || x[0].Key[0] != '$' {
			return []any{x}
		}
		if len(x) != 1 {
			return nil
		}
		switch x[0].Key {
		case "$eq":
			return equalityValues(x[0].Value)
		case "$in":
			var out []any
			for _, el := range bsonutil.ToA(x[0].Value) {
				vals := equalityValues(el)
				if len(vals) != 1 {
					return nil
				}
				out = append(out, vals[0])
			}
			return out
		}
		return nil
	}
	return []any{v}
}

// simpleCollation reports whether a command compares strings as they are.
func simpleCollation(body bson.D) bool {
	v, ok := bsonutil.Field(body, "collation")
	if !ok {
		return true
	}
	locale, _ := bsonutil.Field(bsonutil.ToD(v), "locale")
	return locale == "simple"
}

// errStale reports a shard's StaleConfig or StaleDbVersion: the router
// refreshes and runs the command again.
var errStale = errors.New("router: stale routing information")

// isStale recognises a shard's answer that the router's version is old,
// at the top of the reply or in a write error.
func isStale(reply bson.D) bool {
	switch wireclient.ReplyCode(reply) {
	case mongoerr.StaleConfig, mongoerr.StaleDbVersion, mongoerr.StaleEpoch:
		return true
	}
	for _, we := range bsonutil.ToA(mustField(reply, "writeErrors")) {
		c, _ := bsonutil.Field(bsonutil.ToD(we), "code")
		switch n, _ := c.(int32); mongoerr.Code(n) {
		case mongoerr.StaleConfig, mongoerr.StaleDbVersion, mongoerr.StaleEpoch:
			return true
		}
	}
	return false
}

// runRefreshing runs a command until it ends without errStale,
// forgetting what the router knows of the command's collection (or its
// database) between tries, at most maxStaleRetries times. Writes retry
// their stale statements themselves, since others may have applied.
func (r *Router) runRefreshing(op *operation, h handlerFunc) (bson.D, error) {
	for i := 0; ; i++ {
		reply, err := h(r, op)
		if !errors.Is(err, errStale) {
			return reply, err
		}
		r.forgetTarget(op)
		if i+1 >= maxStaleRetries {
			return nil, mongoerr.Newf(mongoerr.StaleConfig, "routing information for %s is still stale after %d refreshes", op.db, maxStaleRetries)
		}
	}
}

// forgetTarget forgets what the router knows of the collection a command
// is about: its first value names it, within the command's database or,
// for an admin command such as shardCollection, as a whole namespace; a
// command without one (dropDatabase) forgets its database.
func (r *Router) forgetTarget(op *operation) {
	name, ok := op.body[0].Value.(string)
	switch {
	case ok && op.db == "admin" && strings.Contains(name, "."):
		r.catalog.invalidate(name)
	case ok:
		r.catalog.invalidate(op.db + "." + name)
	default:
		r.catalog.invalidateDatabase(op.db)
	}
}

// send runs a client's command on one target with its version, and
// reports errStale when the shard says the router is out of date.
func (r *Router) send(op *operation, t target, cmd bson.D) (bson.D, error) {
	cmd = append(cmd, t.version...)
	reply, err := r.call(op, t.rs, t.db, cmd)
	if err != nil {
		return nil, err
	}
	if isStale(reply) {
		return nil, errStale
	}
	return reply, nil
}

// routerAddedFields is room for the fields the router appends to a
// command it sends on (shardVersion, databaseVersion, $clusterTime,
// stmtIds), so that appending them does not copy the command again.
const routerAddedFields = 4

// passThrough is a client's command as the router sends it on: without
// $db (the client adds its own) and the fields the router sets itself.
func passThrough(body bson.D) bson.D {
	out := make(bson.D, 0, len(body)+routerAddedFields)
	for _, e := range body {
		switch e.Key {
		case "$db", "$clusterTime", "shardVersion", "databaseVersion":
			continue
		}
		out = append(out, e)
	}
	return out
}
