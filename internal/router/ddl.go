package router

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// ddlTargets are the shards a collection's definition lives on: every
// shard for a sharded collection (each holds its indexes, TTL included),
// the database's primary shard otherwise.
func (r *Router) ddlTargets(op *operation, p placement) ([]target, error) {
	if p.table == nil {
		return r.targets(op, p, nil)
	}
	ids, err := r.catalog.shardIDs(op)
	if err != nil {
		return nil, err
	}
	return r.resolve(op, p, ids)
}

// broadcast sends a command to every target at once and answers with
// the first error, in target order, else the primary shard's reply (the
// first target's when the primary is not among them).
func (r *Router) broadcast(op *operation, p placement, ts []target, cmd bson.D, ignore ...mongoerr.Code) (bson.D, error) {
	replies := make([]bson.D, len(ts))
	err := r.fanOut(op, len(ts), func(sub *operation, i int) error {
		var err error
		replies[i], err = r.send(sub, ts[i], append(bson.D(nil), cmd...))
		return err
	})
	if err != nil {
		return nil, err
	}
	var answer bson.D
	for i, reply := range replies {
		if code := wireclient.ReplyCode(reply); code != 0 && !containsCode(ignore, code) {
			return forwardable(reply), nil
		}
		if answer == nil || ts[i].shard == p.db.Primary {
			answer = forwardable(reply)
		}
	}
	return answer, nil
}

func containsCode(codes []mongoerr.Code, c mongoerr.Code) bool {
	for _, x := range codes {
		if x == c {
			return true
		}
	}
	return false
}

// cmdCollectionDDL is create, createIndexes, dropIndexes and collMod:
// sent to every shard holding the collection.
func cmdCollectionDDL(r *Router, op *operation) (bson.D, error) {
	coll, err := collectionArg(op)
	if err != nil {
		return nil, err
	}
	ns := op.db + "." + coll
	p, err := r.place(op, ns, op.name != "dropIndexes")
	if err != nil {
		return nil, err
	}
	if op.name == "createIndexes" && p.table != nil {
		if err := checkUniqueIndexes(p.table, op.body); err != nil {
			return nil, err
		}
	}
	ts, err := r.ddlTargets(op, p)
	if err != nil {
		return nil, err
	}
	return r.broadcast(op, p, ts, passThrough(op.body))
}

// checkUniqueIndexes refuses a unique index a shard could not enforce
// alone: one whose key does not start with the shard key's fields
// (ShardKeyPattern::isUniqueIndexCompatible); _id's is always allowed.
func checkUniqueIndexes(t *shardmeta.RoutingTable, body bson.D) error {
	for _, raw := range bsonutil.ToA(mustField(body, "indexes")) {
		spec := bsonutil.ToD(raw)
		if unique, _ := bsonutil.Field(spec, "unique"); !bsonutil.TrueValue(unique) {
			continue
		}
		key := bsonutil.ToD(mustField(spec, "key"))
		if len(key) == 1 && key[0].Key == "_id" || prefixedBy(key, t) {
			continue
		}
		return mongoerr.Newf(mongoerr.CannotCreateIndex, "cannot create unique index over %s with shard key pattern %s",
			bsonutil.Format(key), t.Pattern())
	}
	return nil
}

func prefixedBy(key bson.D, t *shardmeta.RoutingTable) bool {
	fields := t.Pattern().Fields()
	if len(key) < len(fields) {
		return false
	}
	for i, f := range fields {
		if key[i].Key != f.Path {
			return false
		}
	}
	return true
}

// cmdDrop drops a collection: an unsharded one on its database's
// primary shard; a sharded one as mongod's drop coordinator orders it,
// the metadata first, then every shard's copy under the namespace's
// critical section there (_shardsvrDropCollectionParticipant), so that
// a router still sending the dropped incarnation's version is told it is
// stale by every shard that dropped, and re-creates nothing.
func cmdDrop(r *Router, op *operation) (bson.D, error) {
	coll, err := collectionArg(op)
	if err != nil {
		return nil, err
	}
	ns := op.db + "." + coll
	p, err := r.place(op, ns, false)
	if err != nil || !p.found {
		return bson.D{}, err // nothing to drop: 7.0+ answers ok
	}
	var reply bson.D
	if p.table == nil {
		reply, err = r.dropUnsharded(op, p)
	} else {
		reply, err = r.dropSharded(op, p)
	}
	r.catalog.invalidate(ns)
	if err != nil || wireclient.ReplyCode(reply) != 0 {
		return reply, err
	}
	return bsonutil.WithoutField(bsonutil.WithoutField(reply, "code"), "codeName"), nil
}

// dropUnsharded drops an unsharded collection on its primary shard, then
// any copy the other shards hold: copies that a drop of the sharded
// collection it once was left when its router died between forgetting
// the metadata and the shards' drops. So a drop sent again finishes that
// one.
func (r *Router) dropUnsharded(op *operation, p placement) (bson.D, error) {
	ts, err := r.ddlTargets(op, p)
	if err != nil {
		return nil, err
	}
	reply, err := r.broadcast(op, p, ts, passThrough(op.body), mongoerr.NamespaceNotFound)
	if err != nil || wireclient.ReplyCode(reply) != 0 {
		return reply, err
	}
	others, err := r.otherShards(op, p)
	if err != nil || len(others) == 0 {
		return reply, err
	}
	if _, err := r.dropOnShards(op, p, others, p.ns); err != nil {
		return nil, err
	}
	return reply, nil
}

// otherShards are the targets of every shard but the database's primary.
func (r *Router) otherShards(op *operation, p placement) ([]target, error) {
	ids, err := r.catalog.shardIDs(op)
	if err != nil {
		return nil, err
	}
	ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == p.db.Primary })
	if len(ids) == 0 {
		return nil, nil
	}
	return r.resolve(op, p, ids)
}

func (r *Router) dropSharded(op *operation, p placement) (bson.D, error) {
	ts, err := r.ddlTargets(op, p)
	if err != nil {
		return nil, err
	}
	if err := r.forgetCollection(op, p.ns, p.table.Collection().UUID); err != nil {
		return nil, err
	}
	return r.dropOnShards(op, p, ts, p.ns)
}

// dropOnShards drops ns's copy on every shard of ts, each under its
// critical section there (_shardsvrDropCollectionParticipant), once the
// config servers forgot it.
func (r *Router) dropOnShards(op *operation, p placement, ts []target, ns string) (bson.D, error) {
	for i := range ts {
		ts[i].db, ts[i].version = "admin", nil
	}
	reply, err := r.broadcast(op, p, ts, bson.D{{Key: "_shardsvrDropCollectionParticipant", Value: ns}}, mongoerr.NamespaceNotFound)
	if err == nil && wireclient.ReplyCode(reply) != 0 {
		err = wireclient.MongoError(reply)
	}
	return reply, err
}

// forgetCollection removes a dropped collection's metadata: its chunks,
// then its entry.
func (r *Router) forgetCollection(op *operation, ns string, uuid any) error {
	if err := r.configDelete(op, shardmeta.ChunksCollection, bson.D{{Key: "uuid", Value: uuid}}); err != nil {
		return err
	}
	if err := r.configDelete(op, shardmeta.CollectionsCollection, bson.D{{Key: "_id", Value: ns}}); err != nil {
		return err
	}
	r.changelog(op, "dropCollection", ns, bson.D{})
	return nil
}

// cmdDropDatabase drops a database as mongod's coordinator orders it:
// each sharded collection as drop does, then the database's entry on
// the config servers, then every shard's copy with routed commands on
// the database held there (_shardsvrDropDatabaseParticipant), so that a
// router still holding the dropped database's version is told it is
// stale and re-creates nothing on the old primary.
func cmdDropDatabase(r *Router, op *operation) (bson.D, error) {
	p, err := r.place(op, op.db+".", false)
	if err != nil || !p.found {
		return bson.D{}, err
	}
	ids, err := r.catalog.shardIDs(op)
	if err != nil {
		return nil, err
	}
	ts, err := r.resolve(op, p, ids)
	if err != nil {
		return nil, err
	}
	if err := r.dropShardedCollections(op, p, ts); err != nil {
		return nil, err
	}
	if err := r.dropDatabaseMetadata(op); err != nil {
		return nil, err
	}
	for i := range ts {
		ts[i].db, ts[i].version = "admin", nil
	}
	reply, err := r.broadcast(op, p, ts, bson.D{{Key: "_shardsvrDropDatabaseParticipant", Value: op.db}})
	if err == nil && wireclient.ReplyCode(reply) != 0 {
		err = wireclient.MongoError(reply)
	}
	if err != nil {
		return nil, err
	}
	return bson.D{{Key: "dropped", Value: op.db}}, nil
}

// dropShardedCollections drops each sharded collection of the database
// as cmdDrop does (metadata, then every shard's copy under its critical
// section), before the shards drop the rest of the database.
func (r *Router) dropShardedCollections(op *operation, p placement, ts []target) error {
	colls, err := r.configFind(op, shardmeta.CollectionsCollection,
		bson.D{{Key: "_id", Value: bson.D{{Key: "$regex", Value: "^" + regexQuote(op.db) + `\.`}}}}, nil)
	if err != nil {
		return err
	}
	for _, c := range colls {
		ns, _ := mustField(c, "_id").(string)
		if err := r.forgetCollection(op, ns, mustField(c, "uuid")); err != nil {
			return err
		}
		if _, err := r.dropOnShards(op, p, slices.Clone(ts), ns); err != nil {
			return err
		}
		r.catalog.invalidate(ns)
	}
	return nil
}

func (r *Router) dropDatabaseMetadata(op *operation) error {
	if err := r.configDelete(op, shardmeta.DatabasesCollection, bson.D{{Key: "_id", Value: op.db}}); err != nil {
		return err
	}
	r.catalog.invalidateDatabase(op.db)
	r.changelog(op, "dropDatabase", op.db, bson.D{})
	return nil
}

func regexQuote(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\', '.', '+', '*', '?', '(', ')', '|', '[', ']', '{', '}', '^', '$':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// cmdPrimaryCursor is listIndexes and listCollections: answered by the
// database's primary shard, which holds every collection's definition.
func cmdPrimaryCursor(r *Router, op *operation) (bson.D, error) {
	ns := op.db + "."
	if coll, ok := op.body[0].Value.(string); ok {
		ns += coll
	}
	p, err := r.place(op, ns, false)
	if err != nil {
		return nil, err
	}
	ts, err := r.resolve(op, p, []string{p.db.Primary})
	if !p.found {
		ts, err = r.targets(op, p, nil)
	}
	if err != nil {
		return nil, err
	}
	return r.forwardCursor(op, ts[0], passThrough(op.body))
}

// cmdListDatabases adds up every shard's databases.
func cmdListDatabases(r *Router, op *operation) (bson.D, error) {
	_, replies, err := r.eachShard(op, "admin", passThrough(op.body))
	if err != nil {
		return nil, err
	}
	sizes := map[string]int64{}
	var names []string
	for _, reply := range replies {
		for _, raw := range bsonutil.ToA(mustField(reply, "databases")) {
			d := bsonutil.ToD(raw)
			name, _ := mustField(d, "name").(string)
			if _, seen := sizes[name]; !seen {
				names = append(names, name)
			}
			sizes[name] += toInt64(mustField(d, "sizeOnDisk"))
		}
	}
	return databaseList(names, sizes, op.body), nil
}

func databaseList(names []string, sizes map[string]int64, body bson.D) bson.D {
	nameOnly, _ := bsonutil.Field(body, "nameOnly")
	dbs := bson.A{}
	var total int64
	for _, n := range names {
		if n == "admin" || n == "config" || n == "local" {
			continue // the config servers' own, not the shards'
		}
		total += sizes[n]
		if bsonutil.TrueValue(nameOnly) {
			dbs = append(dbs, bson.D{{Key: "name", Value: n}})
			continue
		}
		dbs = append(dbs, bson.D{{Key: "name", Value: n}, {Key: "sizeOnDisk", Value: sizes[n]}, {Key: "empty", Value: sizes[n] == 0}})
	}
	if bsonutil.TrueValue(nameOnly) {
		return bson.D{{Key: "databases", Value: dbs}}
	}
	return bson.D{{Key: "databases", Value: dbs}, {Key: "totalSize", Value: total}, {Key: "totalSizeMb", Value: total >> 20}}
}
