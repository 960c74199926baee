package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/shardstate"
	"github.com/mayflydb/mayfly/internal/writeops"
)

// The cluster roles of --configsvr and --shardsvr (Deps.ClusterRole).
const (
	roleConfigServer = "configsvr"
	roleShardServer  = "shardsvr"
)

// configServerModeNumber is what hello reports as configsvr on a config
// server member, as mongod (kConfigServerModeNumber): routers and shards
// check it before they trust a host as a config server.
const configServerModeNumber = int32(2)

// clusterRoleHelloFields are the fields hello adds on a config server.
func (h *Handler) clusterRoleHelloFields() bson.D {
	if h.deps.ClusterRole != roleConfigServer {
		return nil
	}
	return bson.D{{Key: "configsvr", Value: configServerModeNumber}}
}

// checkConfigServerFlag refuses a replica set config whose configsvr
// field disagrees with --configsvr, with mongod's code and message
// (ReplSetConfig::validate). A replSetInitiate without a config is
// given configsvr: true by internal/repl on a config server.
func (h *Handler) checkConfigServerFlag(cfg bson.D) error {
	if cfg == nil {
		return nil
	}
	v, _ := bsonutil.Field(cfg, "configsvr")
	marked := v == true
	switch {
	case marked && h.deps.ClusterRole != roleConfigServer:
		return mongoerr.New(mongoerr.BadValue, "Nodes being used for config servers must be started with the --configsvr flag")
	case !marked && h.deps.ClusterRole == roleConfigServer:
		return mongoerr.New(mongoerr.BadValue, "Nodes started with the --configsvr flag must have configsvr:true in their config")
	}
	return nil
}

// checkShardVersion checks the shardVersion and databaseVersion a router
// sent with a command to a shard member, and puts the collection's
// ownership filter on the command's context so that its scans skip
// orphans. A stale write answers as mongod's write commands do: ok 1 with
// the StaleConfig as the first statement's write error; any other command
// fails with it. Commands without versions, and members that are not
// shards, are left as they are. A routed command on a collection first
// waits out a migration's critical section and is counted in flight until
// leave is called, so that a critical section starts with no routed write
// still running (internal/shardstate's Migrations.Enter).
func (h *Handler) checkShardVersion(r *request) (reply bson.D, leave func(), err error) {
	leave = func() {}
	if h.deps.Shard == nil {
		return nil, leave, nil
	}
	versions, err := routingVersions(r.body)
	if err != nil || (versions.Shard == nil && versions.Database == nil) {
		return nil, leave, err
	}
	ns := commandNamespace(r)
	if h.deps.Migrations != nil && versions.Shard != nil && ns != "" {
		if leave, err = h.deps.Migrations.Enter(r.ctx, ns); err != nil {
			reply, err = staleWriteReply(r.name, err)
			return reply, func() {}, err
		}
	}
	filter, err := h.deps.Shard.Check(r.ctx, r.db, ns, versions)
	if err != nil {
		reply, err = staleWriteReply(r.name, err)
		return reply, leave, err
	}
	if filter != nil {
		r.ctx = docstore.WithOwnership(r.ctx, filter.Owns)
		_, retryable := bsonutil.Field(r.body, "txnNumber")
		r.ctx = writeops.WithShardKeyGuard(r.ctx, writeops.ShardKeyGuard{Changed: filter.KeyChanged, Owns: filter.Owns, Retryable: retryable})
	}
	return nil, leave, nil
}

// routingVersions reads the shardVersion and databaseVersion fields.
func routingVersions(body bson.D) (shardstate.Versions, error) {
	sv, err := shardVersionOf(body)
	if err != nil {
		return shardstate.Versions{}, err
	}
	dv, err := databaseVersionOf(body)
	return shardstate.Versions{Shard: sv, Database: dv}, err
}

func shardVersionOf(body bson.D) (*shardmeta.ChunkVersion, error) {
	d, ok, err := versionField(body, "shardVersion")
	if err != nil || !ok {
		return nil, err
	}
	v, err := shardmeta.ParseChunkVersion(d)
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.BadValue, "shardVersion: %v", err)
	}
	return &v, nil
}

func databaseVersionOf(body bson.D) (*shardmeta.DatabaseVersion, error) {
	d, ok, err := versionField(body, "databaseVersion")
	if err != nil || !ok {
		return nil, err
	}
	v, err := shardstate.ParseDatabaseVersion(d)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// versionField reads a version field, which must be a document.
func versionField(body bson.D, name string) (bson.D, bool, error) {
	v, ok := bsonutil.Field(body, name)
	if !ok {
		return nil, false, nil
	}
	d, isDoc := v.(bson.D)
	if !isDoc {
		return nil, false, wrongType(name, name, v, "object")
	}
	return d, true, nil
}

// commandNamespace is the collection a command names as its first
// field's value ("db.coll"), empty for a command on the database.
func commandNamespace(r *request) string {
	if len(r.body) == 0 {
		return ""
	}
	coll, ok := r.body[0].Value.(string)
	if !ok || coll == "" {
		return ""
	}
	return r.db + "." + coll
}

// staleWriteReply turns a stale version on insert, update or delete into
// the write commands' reply: nothing written, the error on statement 0,
// ok 1 (mongod's handleError stops the batch there, ordered or not).
func staleWriteReply(command string, err error) (bson.D, error) {
	code := mongoerr.As(err).Code
	if code != mongoerr.StaleConfig && code != mongoerr.StaleDbVersion {
		return nil, err
	}
	writeErrors := bson.E{Key: "writeErrors", Value: bson.A{mongoerr.WriteError(0, err)}}
	switch command {
	case "insert", "delete":
		return bson.D{{Key: "n", Value: int32(0)}, writeErrors}, nil
	case "update":
		return bson.D{{Key: "n", Value: int32(0)}, {Key: "nModified", Value: int32(0)}, writeErrors}, nil
	}
	return nil, err
}
