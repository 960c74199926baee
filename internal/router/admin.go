package router

import (
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// isAdminOnly names the commands mongos runs only against the admin
// database: dispatch refuses them elsewhere, and listCommands says so.
func isAdminOnly(name string) bool {
	switch name {
	case "addShard", "listShards", "removeShard", "enableSharding", "shardCollection",
		"balancerStatus", "balancerStart", "balancerStop", "moveChunk", "movechunk", "moveRange", "split",
		"bulkWrite", "currentOp", "killOp", "getLog", "getCmdLineOpts", "fsync", "fsyncUnlock":
		return true
	}
	return false
}

// adminOnly refuses an admin command sent to another database, as mongos.
func adminOnly(op *operation) error {
	if isAdminOnly(op.name) && op.db != "admin" {
		return mongoerr.Newf(mongoerr.Unauthorized, "%s may only be run against the admin database.", op.name)
	}
	return nil
}

func stringArg(op *operation) (string, error) {
	s, ok := op.body[0].Value.(string)
	if !ok || s == "" {
		return "", mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type 'string'",
			op.name, op.name, bsonutil.TypeName(op.body[0].Value))
	}
	return s, nil
}

// cmdAddShard adds a replica set as a shard: it asks the set's hello for
// its name and members and records {_id: setName, host:
// "setName/members", state: 1, topologyTime}.
func cmdAddShard(r *Router, op *operation) (bson.D, error) {
	url, err := stringArg(op)
	if err != nil {
		return nil, err
	}
	given, seeds := "", []string{url}
	if strings.Contains(url, "/") {
		if given, seeds, err = wireclient.ParseSetString(url); err != nil {
			return nil, mongoerr.New(mongoerr.FailedToParse, err.Error())
		}
	}
	shard, err := r.describeShard(op, given, seeds)
	if err != nil {
		return nil, err
	}
	if name, ok := bsonutil.Field(op.body, "name"); ok {
		shard.ID, _ = name.(string)
	}
	if existing, found, err := r.existingShard(op, shard); err != nil || found {
		return bson.D{{Key: "shardAdded", Value: existing}}, err
	}
	if err := r.writeShardIdentity(op, shard, seeds); err != nil {
		return nil, err
	}
	raw, err := shardmeta.Encode(shard)
	if err != nil {
		return nil, err
	}
	if err := r.configInsert(op, shardmeta.ShardsCollection, raw); err != nil {
		return nil, err
	}
	r.changelog(op, "addShard", "", bson.D{{Key: "name", Value: shard.ID}, {Key: "host", Value: shard.Host}})
	return bson.D{{Key: "shardAdded", Value: shard.ID}}, nil
}

// writeShardIdentity tells a new shard that it is one, and where the
// config servers are, as addShard does on mongod: admin.system.version's
// {_id: "shardIdentity", shardName, clusterId, configsvrConnectionString}.
func (r *Router) writeShardIdentity(op *operation, shard shardmeta.Shard, seeds []string) error {
	if err := r.ensureClusterVersion(op); err != nil {
		return err
	}
	docs, err := r.configFind(op, shardmeta.VersionCollection, nil, nil)
	if err != nil || len(docs) == 0 {
		return orNoClusterID(err)
	}
	var version shardmeta.ClusterVersion
	if err := decodeD(docs[0], &version); err != nil {
		return err
	}
	set := bson.D{{Key: "$set", Value: bson.D{{Key: "shardName", Value: shard.ID}, {Key: "clusterId", Value: version.ClusterID},
		{Key: "configsvrConnectionString", Value: r.config.ConnectionString()}}}}
	update := bson.D{{Key: "update", Value: "system.version"}, {Key: "updates", Value: bson.A{bson.D{
		{Key: "q", Value: bson.D{{Key: "_id", Value: "shardIdentity"}}}, {Key: "u", Value: set}, {Key: "upsert", Value: true}}}},
		{Key: "writeConcern", Value: majority()}}
	reply, err := r.call(op, wireclient.NewReplicaSet(shard.ID, seeds, r.client, r.clock), "admin", update)
	if err == nil {
		err = wireclient.MongoError(reply)
	}
	if err == nil {
		err = firstWriteError(reply)
	}
	if err != nil {
		return mongoerr.Newf(mongoerr.OperationFailed, "failed to write the shardIdentity document on %s :: caused by :: %v", shard.ID, err)
	}
	return nil
}

func orNoClusterID(err error) error {
	if err != nil {
		return err
	}
	return mongoerr.New(mongoerr.OperationFailed, "config.version has no clusterId")
}

// describeShard reads a set's hello: its name (which must match the one
// given), its members and its config version.
func (r *Router) describeShard(op *operation, given string, seeds []string) (shardmeta.Shard, error) {
	probe := wireclient.NewReplicaSet(given, seeds, r.client, r.clock)
	var hello bson.D
	var err error
	for _, h := range seeds {
		if hello, err = probe.Hello(op.ctx, h); err == nil {
			break
		}
	}
	if err != nil {
		return shardmeta.Shard{}, mongoerr.Newf(mongoerr.OperationFailed, "failed to run command { hello: 1 } when attempting to add shard %s :: caused by :: %v", strings.Join(seeds, ","), err)
	}
	setName, _ := bsonutil.Field(hello, "setName")
	name, _ := setName.(string)
	if name == "" {
		return shardmeta.Shard{}, mongoerr.Newf(mongoerr.OperationFailed, "host %s is not a replica set member: a shard must be a replica set", seeds[0])
	}
	if given != "" && given != name {
		return shardmeta.Shard{}, mongoerr.Newf(mongoerr.OperationFailed, "the provided connection string (%s/%s) does not match the actual set name %s",
			given, strings.Join(seeds, ","), name)
	}
	var members []string
	for _, h := range bsonutil.ToA(mustField(hello, "hosts")) {
		if s, ok := h.(string); ok {
			members = append(members, s)
		}
	}
	if len(members) == 0 {
		members = seeds
	}
	version, _ := bsonutil.Field(hello, "setVersion")
	return shardmeta.Shard{ID: name, Host: name + "/" + strings.Join(members, ","), State: shardmeta.ShardStateActive,
		TopologyTime: r.time.Now(), ReplSetConfigVersion: toInt64(version)}, nil
}

// existingShard finds a shard already recorded with the same name: the
// same set again is a success (addShard is idempotent), another is not.
func (r *Router) existingShard(op *operation, s shardmeta.Shard) (string, bool, error) {
	shards, err := r.catalog.shardDocs(op)
	if err != nil {
		return "", false, err
	}
	for _, old := range shards {
		if old.ID != s.ID {
			continue
		}
		if sameSet(old.Host, s.Host) {
			return old.ID, true, nil
		}
		return "", true, mongoerr.Newf(mongoerr.IllegalOperation, "A shard named %s already exists with host %s", s.ID, old.Host)
	}
	return "", false, nil
}

func sameSet(a, b string) bool {
	an, ah, errA := wireclient.ParseSetString(a)
	bn, bh, errB := wireclient.ParseSetString(b)
	if errA != nil || errB != nil || an != bn {
		return false
	}
	for _, h := range bh {
		for _, x := range ah {
			if x == h {
				return true
			}
		}
	}
	return false
}

func cmdListShards(r *Router, op *operation) (bson.D, error) {
	filter, _ := bsonutil.Field(op.body, "filter")
	docs, err := r.configFind(op, shardmeta.ShardsCollection, bsonutil.ToD(filter), bson.D{{Key: "_id", Value: int32(1)}})
	if err != nil {
		return nil, err
	}
	arr := make(bson.A, len(docs))
	for i, d := range docs {
		arr[i] = d
	}
	return bson.D{{Key: "shards", Value: arr}}, nil
}

// cmdRemoveShard drains a shard as mongod does: the first call marks it
// draining, later calls report what it still owns, and the call that
// finds it owning nothing removes it. With no migrations yet, a shard
// that owns chunks or databases stays draining.
func cmdRemoveShard(r *Router, op *operation) (bson.D, error) {
	id, err := stringArg(op)
	if err != nil {
		return nil, err
	}
	shards, err := r.catalog.shardDocs(op)
	if err != nil {
		return nil, err
	}
	target, found := findShard(shards, id)
	if !found {
		return nil, mongoerr.Newf(mongoerr.ShardNotFound, "Shard %s not found", id)
	}
	if len(shards) == 1 {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "Operation not allowed because it would remove the last shard")
	}
	chunks, dbs, err := r.ownedBy(op, id)
	if err != nil {
		return nil, err
	}
	if !target.Draining {
		return r.startDraining(op, id, dbs)
	}
	if chunks > 0 || len(dbs) > 0 {
		return bson.D{{Key: "msg", Value: "draining ongoing"}, {Key: "state", Value: "ongoing"},
			{Key: "remaining", Value: bson.D{{Key: "chunks", Value: chunks}, {Key: "dbs", Value: int64(len(dbs))},
				{Key: "jumboChunks", Value: int64(0)}}},
			{Key: "note", Value: "you need to call moveCollection for collectionsToMove and afterwards movePrimary for the dbsToMove"},
			{Key: "dbsToMove", Value: dbs}}, nil
	}
	return r.finishRemoval(op, id)
}

func findShard(shards []shardmeta.Shard, id string) (shardmeta.Shard, bool) {
	for _, s := range shards {
		if s.ID == id {
			return s, true
		}
	}
	return shardmeta.Shard{}, false
}

func (r *Router) startDraining(op *operation, id string, dbs bson.A) (bson.D, error) {
	err := r.configUpdate(op, shardmeta.ShardsCollection, bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "draining", Value: true}}}}, false)
	if err != nil {
		return nil, err
	}
	r.changelog(op, "removeShard.start", "", bson.D{{Key: "shard", Value: id}})
	return bson.D{{Key: "msg", Value: "draining started successfully"}, {Key: "state", Value: "started"},
		{Key: "shard", Value: id},
		{Key: "note", Value: "you need to call moveCollection for collectionsToMove and afterwards movePrimary for the dbsToMove"},
		{Key: "dbsToMove", Value: dbs}, {Key: "collectionsToMove", Value: bson.A{}}}, nil
}

func (r *Router) finishRemoval(op *operation, id string) (bson.D, error) {
	if err := r.configDelete(op, shardmeta.ShardsCollection, bson.D{{Key: "_id", Value: id}}); err != nil {
		return nil, err
	}
	r.catalog.forgetShard(id)
	r.changelog(op, "removeShard", "", bson.D{{Key: "shard", Value: id}})
	return bson.D{{Key: "msg", Value: "removeshard completed successfully"}, {Key: "state", Value: "completed"},
		{Key: "shard", Value: id}}, nil
}

// ownedBy counts a shard's chunks and lists the databases it is primary of.
func (r *Router) ownedBy(op *operation, id string) (int64, bson.A, error) {
	chunks, err := r.configFind(op, shardmeta.ChunksCollection, bson.D{{Key: "shard", Value: id}}, nil)
	if err != nil {
		return 0, nil, err
	}
	dbDocs, err := r.configFind(op, shardmeta.DatabasesCollection, bson.D{{Key: "primary", Value: id}}, bson.D{{Key: "_id", Value: int32(1)}})
	if err != nil {
		return 0, nil, err
	}
	dbs := bson.A{}
	for _, d := range dbDocs {
		dbs = append(dbs, mustField(d, "_id"))
	}
	return int64(len(chunks)), dbs, nil
}

// cmdEnableSharding creates the database's record (8.0 needs nothing
// more to shard its collections), on primaryShard when given.
func cmdEnableSharding(r *Router, op *operation) (bson.D, error) {
	db, err := stringArg(op)
	if err != nil {
		return nil, err
	}
	primary, _ := bsonutil.Field(op.body, "primaryShard")
	want, _ := primary.(string)
	d, found, err := r.catalog.database(op, db, false)
	if err != nil {
		return nil, err
	}
	if !found {
		d, _, err = r.catalog.createDatabase(op, db, want)
		if err != nil {
			return nil, err
		}
	}
	if want != "" && d.Primary != want {
		return nil, mongoerr.Newf(mongoerr.NamespaceExists, "database %s already exists with primary shard %s", db, d.Primary)
	}
	return bson.D{}, nil
}

// changelog records an event in config.changelog; a failure to record is
// logged, not returned, as the change itself is done.
func (r *Router) changelog(op *operation, what, ns string, details bson.D) {
	now := r.clock.Now()
	entry := shardmeta.ChangelogEntry{
		ID:     fmt.Sprintf("%s-%s-%s", r.cfg.Host, now.UTC().Format("2006-01-02T15:04:05.000Z07:00"), bson.NewObjectID().Hex()),
		Server: r.cfg.Host, Shard: "config", ClientAddr: clientAddr(op),
		Time: bson.NewDateTimeFromTime(now), What: what, NS: ns, Details: details,
	}
	raw, err := shardmeta.Encode(entry)
	if err == nil {
		err = r.configInsert(op, shardmeta.ChangelogCollection, raw)
	}
	if err != nil {
		r.log.Warn("could not record a config.changelog entry", "what", what, "ns", ns, "err", err)
	}
}

// cmdBalancerStatus asks the config servers' primary, where the
// balancer runs, as mongos sends _configsvrBalancerStatus.
func cmdBalancerStatus(r *Router, op *operation) (bson.D, error) {
	reply, err := r.call(op, r.config, "admin", bson.D{{Key: "_configsvrBalancerStatus", Value: int32(1)}})
	if err != nil {
		return nil, err
	}
	if err := wireclient.MongoError(reply); err != nil {
		return nil, err
	}
	out := bson.D{}
	for _, e := range forwardable(reply) {
		if e.Key != "ok" {
			out = append(out, e)
		}
	}
	return out, nil
}

// cmdBalancerSwitch is balancerStart and balancerStop: they set the
// balancer document's mode and stopped flag with majority write concern.
func cmdBalancerSwitch(r *Router, op *operation) (bson.D, error) {
	mode := "full"
	if op.name == "balancerStop" {
		mode = "off"
	}
	set := bson.D{{Key: "$set", Value: bson.D{{Key: "mode", Value: mode}, {Key: "stopped", Value: mode == "off"}}}}
	if err := r.configUpdate(op, shardmeta.SettingsCollection, bson.D{{Key: "_id", Value: "balancer"}}, set, true); err != nil {
		return nil, err
	}
	return bson.D{}, nil
}

// forwardToConfig runs a command on the config database (sh.status's
// reads, sh.enableBalancing's writes) on the config servers, whose
// cursors the router hands on as its own.
func forwardToConfig(r *Router, op *operation) (bson.D, error) {
	reply, err := r.call(op, r.config, op.db, passThrough(op.body))
	if err != nil {
		return nil, err
	}
	return r.adoptCursor(op, r.config, reply), nil
}

// clientAddr is the address of the client that asked, "" for the
// router's own work.
func clientAddr(op *operation) string {
	if op.conn == nil {
		return ""
	}
	return op.conn.RemoteAddr()
}
