package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/shardstate"
)

// The shard side of chunk migration: internal commands that routers,
// the config server's balancer and other shards send, as mongod's
// _shardsvrMoveRange, _recvChunk* and _migrateClone/_transferMods. Each
// hands its arguments to internal/shardstate's Migrations.

// migrationCommandRows are the migration commands' table rows.
func migrationCommandRows() map[string]command {
	return map[string]command{
		"_shardsvrMoveRange":       {run: cmdShardsvrMoveRange, role: onPrimary, adminOnly: true},
		"_recvChunkStart":          {run: cmdRecvChunkStart, role: onPrimary, adminOnly: true},
		"_recvChunkStatus":         {run: byMigrationID(recvChunkStatus), adminOnly: true},
		"_recvChunkCommit":         {run: byMigrationID(recvChunkCommit), role: onPrimary, adminOnly: true},
		"_recvChunkReleaseCritSec": {run: byMigrationID(recvChunkRelease), role: onPrimary, adminOnly: true},
		"_recvChunkAbort":          {run: byMigrationID(recvChunkAbort), role: onPrimary, adminOnly: true},
		"_migrateClone":            {run: byMigrationID(numberedPull((*shardstate.Migrations).MigrateClone, cloneAnswer)), adminOnly: true},
		"_transferMods":            {run: byMigrationID(numberedPull((*shardstate.Migrations).TransferMods, modsAnswer)), adminOnly: true},
		"_getNextSessionMods":      {run: byMigrationID(numberedPull((*shardstate.Migrations).NextSessionMods, sessionModsAnswer)), adminOnly: true},

		"_configsvrCommitChunkMigration": {run: cmdConfigsvrCommitChunkMigration, role: onPrimary, adminOnly: true},
		"_configsvrCommitChunkSplit":     {run: cmdConfigsvrCommitChunkSplit, role: onPrimary, adminOnly: true},
		"_configsvrBalancerStatus":       {run: cmdConfigsvrBalancerStatus, adminOnly: true},
	}
}

// migrations returns the shard's migration service, refusing the
// command on a member that is not a shard, as mongod refuses _shardsvr
// commands there.
func (h *Handler) migrations(r *request) (*shardstate.Migrations, error) {
	if h.deps.Migrations == nil {
		return nil, mongoerr.Newf(mongoerr.ShardingStateNotInitialized, "%s can only be run on a shard server", r.name)
	}
	return h.deps.Migrations, nil
}

// rangeArgs reads the min and max bounds of a migration command.
func rangeArgs(r *request) (migrate.Range, error) {
	lo, err := optDoc(r, "min")
	if err != nil {
		return migrate.Range{}, err
	}
	hi, err := optDoc(r, "max")
	if err != nil {
		return migrate.Range{}, err
	}
	if lo == nil || hi == nil {
		return migrate.Range{}, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.%s' is missing but a required field", r.name, missingOf(lo, "min", "max"))
	}
	return migrate.Range{Min: lo, Max: hi}, nil
}

func missingOf(lo bson.D, first, second string) string {
	if lo == nil {
		return first
	}
	return second
}

// stringField reads a required string argument.
func stringField(r *request, name string) (string, error) {
	v, ok := bsonutil.Field(r.body, name)
	if !ok {
		return "", mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.%s' is missing but a required field", r.name, name)
	}
	s, isString := v.(string)
	if !isString {
		return "", wrongType(r.name, name, v, "string")
	}
	return s, nil
}

func cmdShardsvrMoveRange(h *Handler, r *request) (bson.D, error) {
	m, err := h.migrations(r)
	if err != nil {
		return nil, err
	}
	ns, err := stringField(r, r.name)
	if err != nil {
		return nil, err
	}
	to, err := stringField(r, "toShard")
	if err != nil {
		return nil, err
	}
	rng, err := rangeArgs(r)
	if err != nil {
		return nil, err
	}
	return bson.D{}, m.MoveRange(r.ctx, shardstate.MoveRequest{Namespace: ns, ToShard: to, Range: rng})
}

func cmdRecvChunkStart(h *Handler, r *request) (bson.D, error) {
	m, err := h.migrations(r)
	if err != nil {
		return nil, err
	}
	var req shardstate.RecvRequest
	if req.Namespace, err = stringField(r, r.name); err != nil {
		return nil, err
	}
	if req.MigrationID, err = stringField(r, "migrationId"); err != nil {
		return nil, err
	}
	if req.From, err = stringField(r, "from"); err != nil {
		return nil, err
	}
	req.FromShard, _ = stringField(r, "fromShard")
	if req.Range, err = rangeArgs(r); err != nil {
		return nil, err
	}
	if req.KeyPattern, err = optDoc(r, "shardKeyPattern"); err != nil {
		return nil, err
	}
	uuid, _ := bsonutil.Field(r.body, "collectionUuid")
	req.CollectionUUID, _ = uuid.(bson.Binary)
	return bson.D{{Key: "started", Value: true}}, m.RecvStart(req)
}

// migrationCall is a migration command addressed by its migration id
// (the command's value), run on the shard's Migrations.
type migrationCall func(m *shardstate.Migrations, r *request, id string) (bson.D, error)

// byMigrationID turns a migrationCall into a handler.
func byMigrationID(call migrationCall) handlerFunc {
	return func(h *Handler, r *request) (bson.D, error) {
		m, err := h.migrations(r)
		if err != nil {
			return nil, err
		}
		id, err := stringField(r, r.name)
		if err != nil {
			return nil, err
		}
		return call(m, r, id)
	}
}

func recvChunkStatus(m *shardstate.Migrations, _ *request, id string) (bson.D, error) {
	return m.RecvStatus(id), nil
}

func recvChunkCommit(m *shardstate.Migrations, r *request, id string) (bson.D, error) {
	return bson.D{}, m.RecvCommit(r.ctx, id)
}

func recvChunkRelease(m *shardstate.Migrations, r *request, id string) (bson.D, error) {
	ns, err := stringField(r, "nss")
	if err != nil {
		return nil, err
	}
	return bson.D{}, m.RecvRelease(r.ctx, id, ns)
}

func recvChunkAbort(m *shardstate.Migrations, _ *request, id string) (bson.D, error) {
	return bson.D{}, m.RecvAbort(id)
}

// numberedPull is a migration command that answers the next batch of a
// pull numbered by its seq (the same seq again: the same batch), shaped
// by answer.
func numberedPull[T any](pull func(m *shardstate.Migrations, id string, seq int64) (T, error), answer func(T) bson.D) migrationCall {
	return func(m *shardstate.Migrations, r *request, id string) (bson.D, error) {
		seq, err := requestSeq(r)
		if err != nil {
			return nil, err
		}
		batch, err := pull(m, id, seq)
		if err != nil {
			return nil, err
		}
		return answer(batch), nil
	}
}

// cloneAnswer is a _migrateClone answer: the range's next documents.
func cloneAnswer(docs []bson.D) bson.D {
	return bson.D{{Key: "objects", Value: migrationDocs(docs)}}
}

// modsAnswer is a _transferMods answer: the writes since the last pull.
func modsAnswer(mods shardstate.Mods) bson.D {
	return bson.D{{Key: "reload", Value: migrationDocs(mods.Reload)}, {Key: "deleted", Value: bson.A(mods.Deleted)}}
}

// sessionModsAnswer is a _getNextSessionMods answer: the donor's next
// retryable-write records, which move with the range.
func sessionModsAnswer(stmts []session.MovedStmt) bson.D {
	return bson.D{{Key: "stmts", Value: shardstate.SessionModsDoc(stmts)}}
}

// requestSeq reads the number a recipient gives each _migrateClone and
// _transferMods, so that one sent again gets the answer it lost.
func requestSeq(r *request) (int64, error) {
	v, ok := bsonutil.Field(r.body, "seq")
	if !ok {
		return 0, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.seq' is missing but a required field", r.name)
	}
	return cmdargs.Int64(r.name, "seq", v)
}

func migrationDocs(docs []bson.D) bson.A {
	out := make(bson.A, len(docs))
	for i, d := range docs {
		out[i] = d
	}
	return out
}
