package router

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// catalog caches what the config servers say about shards, databases
// and collections. A cached routing table stays until a shard answers
// StaleConfig for it (or the router changes it itself): the shard
// versions, not a timer, say when it is old.
type catalog struct {
	r *Router

	mu     sync.Mutex
	shards map[string]*wireclient.ReplicaSet
	dbs    map[string]shardmeta.Database
	colls  map[string]*shardmeta.RoutingTable // nil value: known unsharded
}

func newCatalog(r *Router) *catalog {
	return &catalog{r: r, shards: map[string]*wireclient.ReplicaSet{}, dbs: map[string]shardmeta.Database{},
		colls: map[string]*shardmeta.RoutingTable{}}
}

// shardDocs reads config.shards, by _id.
func (c *catalog) shardDocs(op *operation) ([]shardmeta.Shard, error) {
	docs, err := c.r.configFind(op, shardmeta.ShardsCollection, nil, bson.D{{Key: "_id", Value: int32(1)}})
	if err != nil {
		return nil, err
	}
	out := make([]shardmeta.Shard, 0, len(docs))
	for _, d := range docs {
		var s shardmeta.Shard
		if err := decodeD(d, &s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// shard returns the replica set of shard id.
func (c *catalog) shard(op *operation, id string) (*wireclient.ReplicaSet, error) {
	c.mu.Lock()
	rs := c.shards[id]
	c.mu.Unlock()
	if rs != nil {
		return rs, nil
	}
	docs, err := c.shardDocs(op)
	if err != nil {
		return nil, err
	}
	for _, s := range docs {
		if s.ID == id {
			return c.connect(s)
		}
	}
	return nil, mongoerr.Newf(mongoerr.ShardNotFound, "Shard %s not found", id)
}

// connect keeps a replicaSet for a config.shards document.
func (c *catalog) connect(s shardmeta.Shard) (*wireclient.ReplicaSet, error) {
	name, hosts, err := wireclient.ParseSetString(s.Host)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if rs := c.shards[s.ID]; rs != nil {
		return rs, nil
	}
	rs := wireclient.NewReplicaSet(name, hosts, c.r.client, c.r.clock)
	c.shards[s.ID] = rs
	return rs, nil
}

// forgetShard drops a removed shard's connection.
func (c *catalog) forgetShard(id string) {
	c.mu.Lock()
	delete(c.shards, id)
	c.mu.Unlock()
}

// database returns db's config.databases document; create makes it (as
// a first write to a database does through mongos) when there is none.
func (c *catalog) database(op *operation, db string, create bool) (shardmeta.Database, bool, error) {
	c.mu.Lock()
	d, ok := c.dbs[db]
	c.mu.Unlock()
	if ok {
		return d, true, nil
	}
	docs, err := c.r.configFind(op, shardmeta.DatabasesCollection, bson.D{{Key: "_id", Value: db}}, nil)
	if err != nil {
		return shardmeta.Database{}, false, err
	}
	if len(docs) == 0 {
		if !create {
			return shardmeta.Database{}, false, nil
		}
		return c.createDatabase(op, db, "")
	}
	if err := decodeD(docs[0], &d); err != nil {
		return shardmeta.Database{}, false, err
	}
	c.remember(d)
	return d, true, nil
}

func (c *catalog) remember(d shardmeta.Database) {
	c.mu.Lock()
	c.dbs[d.ID] = d
	c.mu.Unlock()
}

// createDatabase records db with its primary shard: the one asked for,
// or the shard that is primary of the fewest databases.
func (c *catalog) createDatabase(op *operation, db, primary string) (shardmeta.Database, bool, error) {
	if err := checkDatabaseName(db); err != nil {
		return shardmeta.Database{}, false, err
	}
	if primary == "" {
		var err error
		if primary, err = c.leastLoadedShard(op); err != nil {
			return shardmeta.Database{}, false, err
		}
	} else if _, err := c.shard(op, primary); err != nil {
		return shardmeta.Database{}, false, err
	}
	uuid, err := shardmeta.NewUUID()
	if err != nil {
		return shardmeta.Database{}, false, err
	}
	d := shardmeta.Database{ID: db, Primary: primary, Version: shardmeta.DatabaseVersion{
		UUID: uuid, Timestamp: c.r.time.Now(), LastMod: 1}}
	raw, err := shardmeta.Encode(d)
	if err != nil {
		return shardmeta.Database{}, false, err
	}
	err = c.r.configInsert(op, shardmeta.DatabasesCollection, raw)
	if me := mongoerr.As(err); err != nil && me.Code == mongoerr.DuplicateKey {
		return c.database(op, db, false) // another router created it first
	}
	if err != nil {
		return shardmeta.Database{}, false, err
	}
	c.remember(d)
	return d, true, nil
}

// checkDatabaseName refuses the databases the config servers own and
// names no database may have.
func checkDatabaseName(db string) error {
	switch {
	case db == "admin" || db == "config" || db == "local":
		return mongoerr.Newf(mongoerr.InvalidOptions, "Cannot create database '%s' on a shard: it lives on the config servers", db)
	case db == "" || strings.ContainsAny(db, "/\\. \"$"):
		return mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid database name: '%s'", db)
	}
	return nil
}

// leastLoadedShard is the shard that is primary of the fewest databases
// (ties to the lowest id).
func (c *catalog) leastLoadedShard(op *operation) (string, error) {
	shards, err := c.shardDocs(op)
	if err != nil {
		return "", err
	}
	if len(shards) == 0 {
		return "", mongoerr.New(mongoerr.ShardNotFound, "No shards found")
	}
	dbs, err := c.r.configFind(op, shardmeta.DatabasesCollection, nil, nil)
	if err != nil {
		return "", err
	}
	load := map[string]int{}
	for _, raw := range dbs {
		var d shardmeta.Database
		if decodeD(raw, &d) == nil {
			load[d.Primary]++
		}
	}
	best := ""
	for _, s := range shards {
		if s.Draining {
			continue
		}
		if best == "" || load[s.ID] < load[best] {
			best = s.ID
		}
	}
	if best == "" {
		return "", mongoerr.New(mongoerr.ShardNotFound, "No non-draining shard found")
	}
	return best, nil
}

// routing returns ns's routing table, nil for an unsharded collection.
func (c *catalog) routing(op *operation, ns string) (*shardmeta.RoutingTable, error) {
	c.mu.Lock()
	t, ok := c.colls[ns]
	c.mu.Unlock()
	if ok {
		return t, nil
	}
	t, err := c.loadRouting(op, ns)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.colls[ns] = t
	c.mu.Unlock()
	return t, nil
}

func (c *catalog) loadRouting(op *operation, ns string) (*shardmeta.RoutingTable, error) {
	docs, err := c.r.configFind(op, shardmeta.CollectionsCollection, bson.D{{Key: "_id", Value: ns}}, nil)
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	var coll shardmeta.Collection
	if err := decodeD(docs[0], &coll); err != nil {
		return nil, err
	}
	if coll.Unsplittable {
		return nil, nil
	}
	raws, err := c.r.configFind(op, shardmeta.ChunksCollection, bson.D{{Key: "uuid", Value: coll.UUID}}, nil)
	if err != nil {
		return nil, err
	}
	chunks := make([]shardmeta.Chunk, len(raws))
	for i, raw := range raws {
		if err := decodeD(raw, &chunks[i]); err != nil {
			return nil, err
		}
	}
	t, err := shardmeta.NewRoutingTable(coll, chunks)
	if err != nil {
		return nil, fmt.Errorf("router: loading %s: %w", ns, err)
	}
	return t, nil
}

// invalidate forgets what the router knows of ns and its database, so
// that the next use reads them again.
func (c *catalog) invalidate(ns string) {
	db, _, _ := strings.Cut(ns, ".")
	c.mu.Lock()
	delete(c.colls, ns)
	delete(c.dbs, db)
	c.mu.Unlock()
}

// invalidateDatabase forgets db and every collection of it.
func (c *catalog) invalidateDatabase(db string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.dbs, db)
	for ns := range c.colls {
		if strings.HasPrefix(ns, db+".") {
			delete(c.colls, ns)
		}
	}
}

// shardIDs are the ids of every shard, sorted.
func (c *catalog) shardIDs(op *operation) ([]string, error) {
	docs, err := c.shardDocs(op)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(docs))
	for i, s := range docs {
		ids[i] = s.ID
	}
	slices.Sort(ids)
	return ids, nil
}

// decodeD decodes a document read from the config servers.
func decodeD(d bson.D, out any) error {
	raw, err := bson.Marshal(d)
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	return shardmeta.Decode(raw, out)
}
