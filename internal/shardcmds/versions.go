package shardcmds

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/shardstate"
	"github.com/mayflydb/mayfly/internal/writeops"
)

// Admission is a routed command let in past the check of its versions.
type Admission struct {
	// Ctx is the context the command's scans and writes run in: with
	// the collection's ownership filter, so that scans skip orphans, and
	// its shard key guard when Filtered.
	Ctx      context.Context
	Filtered bool
	// Leave ends the command's count in flight on its collection; call
	// it whether or not Admit failed.
	Leave func()
}

// AdmitCommand is Admit for a routed command, whose versions are fields
// of its body and whose collection is its first field's value.
func (s Services) AdmitCommand(ctx context.Context, c cmdargs.Call) (Admission, error) {
	if s.Shard == nil { // Admit lets it in as it is: spare the scan and the namespace's string
		return s.Admit(ctx, c.DB, "", c.Body, false)
	}
	_, retryable := bsonutil.Field(c.Body, "txnNumber")
	return s.Admit(ctx, c.DB, commandNamespace(c), c.Body, retryable)
}

// Admit checks the shardVersion and databaseVersion fields a router sent
// for namespace ns of db (with a command, or in a bulkWrite's nsInfo
// entry) and gives the command the collection's ownership filter. A
// stale version fails with StaleConfig or StaleDbVersion. Commands
// without versions, and members that are not shards, are let in as they
// are. A command with a shard version on a collection first waits out a
// migration's critical section and is counted in flight until Leave, so
// that a critical section starts with no routed write still running
// (internal/shardstate's Migrations.Enter).
func (s Services) Admit(ctx context.Context, db, ns string, fields bson.D, retryable bool) (Admission, error) {
	adm := Admission{Ctx: ctx, Leave: func() {}}
	if s.Shard == nil {
		return adm, nil
	}
	versions, err := routingVersions(fields)
	if err != nil || (versions.Shard == nil && versions.Database == nil) {
		return adm, err
	}
	if s.Migrations != nil && versions.Shard != nil && ns != "" {
		leave, err := s.Migrations.Enter(ctx, ns)
		if err != nil {
			return adm, err
		}
		adm.Leave = leave
	}
	filter, err := s.Shard.Check(ctx, db, ns, versions)
	if err != nil || filter == nil {
		return adm, err
	}
	adm.Ctx = docstore.WithOwnership(ctx, filter.Owns)
	adm.Ctx = writeops.WithShardKeyGuard(adm.Ctx, writeops.ShardKeyGuard{Changed: filter.KeyChanged, Owns: filter.Owns, Retryable: retryable})
	adm.Filtered = true
	return adm, nil
}

// routingVersions reads the shardVersion and databaseVersion fields.
func routingVersions(fields bson.D) (shardstate.Versions, error) {
	sv, err := shardVersionOf(fields)
	if err != nil {
		return shardstate.Versions{}, err
	}
	dv, err := databaseVersionOf(fields)
	return shardstate.Versions{Shard: sv, Database: dv}, err
}

func shardVersionOf(fields bson.D) (*shardmeta.ChunkVersion, error) {
	d, ok, err := versionField(fields, "shardVersion")
	if err != nil || !ok {
		return nil, err
	}
	v, err := shardmeta.ParseChunkVersion(d)
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.BadValue, "shardVersion: %v", err)
	}
	return &v, nil
}

func databaseVersionOf(fields bson.D) (*shardmeta.DatabaseVersion, error) {
	d, ok, err := versionField(fields, "databaseVersion")
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
func versionField(fields bson.D, name string) (bson.D, bool, error) {
	v, ok := bsonutil.Field(fields, name)
	if !ok {
		return nil, false, nil
	}
	d, isDoc := v.(bson.D)
	if !isDoc {
		return nil, false, mongoerr.WrongType(name, name, v, "object")
	}
	return d, true, nil
}

// commandNamespace is the collection a command names as its first
// field's value ("db.coll"), empty for a command on the database.
func commandNamespace(c cmdargs.Call) string {
	if len(c.Body) == 0 {
		return ""
	}
	coll, ok := c.Body[0].Value.(string)
	if !ok || coll == "" {
		return ""
	}
	return c.DB + "." + coll
}

// StaleWriteReply turns a stale version on insert, update or delete into
// the write commands' reply: nothing written, the error on statement 0,
// ok 1 (mongod's handleError stops the batch there, ordered or not).
// Any other command, or any other error, fails with err.
func StaleWriteReply(command string, err error) (bson.D, error) {
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
