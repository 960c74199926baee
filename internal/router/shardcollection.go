package router

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardkey"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// shardRequest is a parsed shardCollection.
type shardRequest struct {
	ns      string
	pattern *shardkey.Pattern
	unique  bool
}

func parseShardCollection(op *operation) (shardRequest, error) {
	ns, err := stringArg(op)
	if err != nil {
		return shardRequest{}, err
	}
	if db, coll := splitNS(ns); db == "" || coll == "" {
		return shardRequest{}, mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", ns)
	}
	key, ok := mustField(op.body, "key").(bson.D)
	if !ok {
		return shardRequest{}, mongoerr.New(mongoerr.IDLFailedToParse, "BSON field 'shardCollection.key' is missing but a required field")
	}
	pattern, err := shardkey.Parse(key)
	if err != nil {
		return shardRequest{}, err
	}
	unique, _ := bsonutil.Field(op.body, "unique")
	req := shardRequest{ns: ns, pattern: pattern, unique: bsonutil.TrueValue(unique)}
	if _, hashed := pattern.HashedField(); hashed && req.unique {
		return shardRequest{}, mongoerr.New(mongoerr.InvalidOptions, "Hashed shard keys cannot be declared unique. It's possible to ensure uniqueness on the hashed field by declaring an additional (non-hashed) unique index on the field.")
	}
	if !pattern.IsSingleHashed() {
		return shardRequest{}, mongoerr.Newf(mongoerr.InvalidOptions, "shard key %s is not supported: mayfly route shards a collection on one hashed field in this version, such as { _id: \"hashed\" }", pattern)
	}
	return req, nil
}

// cmdShardCollection shards a collection on a hashed key, as 8.0: the
// hashed index on every shard, then the initial chunks — one per shard
// for an empty collection, one on the primary shard otherwise — and the
// config.collections document, with changelog entries around them.
func cmdShardCollection(r *Router, op *operation) (bson.D, error) {
	req, err := parseShardCollection(op)
	if err != nil {
		return nil, err
	}
	p, err := r.place(op, req.ns, true)
	if err != nil {
		return nil, err
	}
	if p.table != nil {
		reply, err := alreadySharded(p.table, req)
		if err == nil {
			err = r.refreshShards(op, p, req.ns)
		}
		return reply, err
	}
	shards, empty, err := r.initialShards(op, p, req)
	if err != nil {
		return nil, err
	}
	if err := r.createOnEveryShard(op, req); err != nil {
		return nil, err
	}
	if err := r.recordSharding(op, p, req, shards, empty); err != nil {
		return nil, err
	}
	r.catalog.invalidate(req.ns)
	if err := r.refreshShards(op, p, req.ns); err != nil {
		return nil, err
	}
	return bson.D{{Key: "collectionsharded", Value: req.ns}}, nil
}

// refreshShards makes every shard read ns's placement again
// (_flushRoutingTableCacheUpdates), as mongod's create coordinator
// tells its participants: a shard that cached ns as unsharded and got
// no chunk would otherwise go on serving a stale router's reads as
// unsharded, from its empty copy.
func (r *Router) refreshShards(op *operation, p placement, ns string) error {
	ids, err := r.catalog.shardIDs(op)
	if err != nil {
		return err
	}
	ts, err := r.resolve(op, p, ids)
	if err != nil {
		return err
	}
	for i := range ts {
		ts[i].db, ts[i].version = "admin", nil
	}
	reply, err := r.broadcast(op, p, ts, bson.D{{Key: "_flushRoutingTableCacheUpdates", Value: ns}})
	if err == nil {
		err = wireclient.MongoError(reply)
	}
	return err
}

func alreadySharded(t *shardmeta.RoutingTable, req shardRequest) (bson.D, error) {
	if bsonutil.Compare(t.Pattern().Spec(), req.pattern.Spec()) == 0 {
		return bson.D{{Key: "collectionsharded", Value: req.ns}}, nil
	}
	return nil, mongoerr.Newf(mongoerr.AlreadyInitialized, "sharding already enabled for collection %s with options { key: %s, unique: %t }",
		req.ns, t.Pattern(), t.Collection().Unique)
}

// initialShards are the shards of the first chunks: every non-draining
// shard for an empty collection, the primary shard if it holds data
// (which then needs an index on the key already, §3.3).
func (r *Router) initialShards(op *operation, p placement, req shardRequest) (ids []string, empty bool, err error) {
	primary, err := r.targets(op, p, nil)
	if err != nil {
		return nil, false, err
	}
	_, coll := splitNS(req.ns)
	reply, err := r.sendOK(op, primary[0], bson.D{{Key: "count", Value: coll}})
	if err != nil {
		return nil, false, err
	}
	if toInt64(mustField(reply, "n")) > 0 {
		// As 8.0 without the balancer: one chunk, on the shard holding the
		// data, which must already be indexed by the key (§3.3).
		indexed, err := r.hasShardKeyIndex(op, primary[0], req)
		if err != nil || !indexed {
			return nil, false, orNoIndex(err)
		}
		return []string{primary[0].shard}, false, nil
	}
	docs, err := r.catalog.shardDocs(op)
	if err != nil {
		return nil, false, err
	}
	for _, s := range docs {
		if !s.Draining {
			ids = append(ids, s.ID)
		}
	}
	slices.Sort(ids)
	return ids, true, nil
}

// createOnEveryShard creates the collection and its shard key index on
// every shard, so each holds its definition and takes its indexes.
func (r *Router) createOnEveryShard(op *operation, req shardRequest) error {
	ids, err := r.catalog.shardIDs(op)
	if err != nil {
		return err
	}
	db, coll := splitNS(req.ns)
	for _, id := range ids {
		rs, err := r.catalog.shard(op, id)
		if err != nil {
			return err
		}
		reply, err := r.call(op, rs, db, bson.D{{Key: "create", Value: coll}})
		if err != nil {
			return err
		}
		if code := wireclient.ReplyCode(reply); code != 0 && code != mongoerr.NamespaceExists {
			return wireclient.MongoError(reply)
		}
		if err := r.buildShardKeyIndex(op, rs, req); err != nil {
			return err
		}
	}
	return nil
}

func orNoIndex(err error) error {
	if err != nil {
		return err
	}
	return mongoerr.New(mongoerr.InvalidOptions, "Please create an index that starts with the proposed shard key before sharding the collection")
}

// recordSharding writes the chunks, then the collection document that
// makes routers use them, with majority write concern.
func (r *Router) recordSharding(op *operation, p placement, req shardRequest, shards []string, empty bool) error {
	uuid, err := shardmeta.NewUUID()
	if err != nil {
		return err
	}
	now, epoch := r.time.Now(), bson.NewObjectID()
	chunks, err := shardmeta.HashedInitialChunks(shardmeta.InitialLayout{Pattern: req.pattern, UUID: uuid,
		Epoch: epoch, ValidAfter: now, Shards: shards})
	if err != nil {
		return err
	}
	coll := shardmeta.Collection{ID: req.ns, Epoch: epoch, Lastmod: bson.NewDateTimeFromTime(r.clock.Now()),
		Timestamp: now, UUID: uuid, Key: req.pattern.Spec(), Unique: req.unique}
	r.changelog(op, "shardCollection.start", req.ns, bson.D{{Key: "shardKey", Value: coll.Key},
		{Key: "collection", Value: req.ns}, {Key: "uuid", Value: uuid}, {Key: "empty", Value: empty},
		{Key: "primary", Value: p.db.Primary}})
	docs := make([]any, len(chunks))
	for i, c := range chunks {
		if docs[i], err = shardmeta.Encode(c); err != nil {
			return err
		}
	}
	if err := r.configInsert(op, shardmeta.ChunksCollection, docs...); err != nil {
		return err
	}
	raw, err := shardmeta.Encode(coll)
	if err != nil {
		return err
	}
	if err := r.configInsert(op, shardmeta.CollectionsCollection, raw); err != nil {
		return err
	}
	r.changelog(op, "shardCollection.end", req.ns, bson.D{{Key: "version", Value: chunks[len(chunks)-1].Lastmod},
		{Key: "numChunks", Value: int32(len(chunks))}})
	return nil
}
