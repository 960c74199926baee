package shardcmds

import (
	"context"

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

// migrations returns the shard's migration service, refusing the
// command on a member that is not a shard, as mongod refuses _shardsvr
// commands there.
func (s Services) migrations(c cmdargs.Call) (*shardstate.Migrations, error) {
	if s.Migrations == nil {
		return nil, NotAShard(c.Name)
	}
	return s.Migrations, nil
}

// NotAShard is mongod's refusal of a shard-only internal command on a
// member that is not a shard.
func NotAShard(command string) error {
	return mongoerr.Newf(mongoerr.ShardingStateNotInitialized, "%s can only be run on a shard server", command)
}

// rangeArgs reads the min and max bounds of a migration command.
func rangeArgs(c cmdargs.Call) (migrate.Range, error) {
	lo, err := c.OptDoc("min")
	if err != nil {
		return migrate.Range{}, err
	}
	hi, err := c.OptDoc("max")
	if err != nil {
		return migrate.Range{}, err
	}
	if lo == nil || hi == nil {
		return migrate.Range{}, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.%s' is missing but a required field", c.Name, missingOf(lo, "min", "max"))
	}
	return migrate.Range{Min: lo, Max: hi}, nil
}

func missingOf(lo bson.D, first, second string) string {
	if lo == nil {
		return first
	}
	return second
}

func shardsvrMoveRange(ctx context.Context, s Services, c cmdargs.Call) (bson.D, error) {
	m, err := s.migrations(c)
	if err != nil {
		return nil, err
	}
	ns, err := c.String(c.Name)
	if err != nil {
		return nil, err
	}
	to, err := c.String("toShard")
	if err != nil {
		return nil, err
	}
	rng, err := rangeArgs(c)
	if err != nil {
		return nil, err
	}
	return bson.D{}, m.MoveRange(ctx, shardstate.MoveRequest{Namespace: ns, ToShard: to, Range: rng})
}

func recvChunkStart(_ context.Context, s Services, c cmdargs.Call) (bson.D, error) {
	m, err := s.migrations(c)
	if err != nil {
		return nil, err
	}
	var req shardstate.RecvRequest
	if req.Namespace, err = c.String(c.Name); err != nil {
		return nil, err
	}
	if req.MigrationID, err = c.String("migrationId"); err != nil {
		return nil, err
	}
	if req.From, err = c.String("from"); err != nil {
		return nil, err
	}
	req.FromShard, _ = c.String("fromShard")
	if req.Range, err = rangeArgs(c); err != nil {
		return nil, err
	}
	if req.KeyPattern, err = c.OptDoc("shardKeyPattern"); err != nil {
		return nil, err
	}
	uuid, _ := bsonutil.Field(c.Body, "collectionUuid")
	req.CollectionUUID, _ = uuid.(bson.Binary)
	return bson.D{{Key: "started", Value: true}}, m.RecvStart(req)
}

// migrationCall is a migration command addressed by its migration id
// (the command's value), run on the shard's Migrations.
type migrationCall func(ctx context.Context, m *shardstate.Migrations, c cmdargs.Call, id string) (bson.D, error)

// byMigrationID turns a migrationCall into a handler.
func byMigrationID(call migrationCall) HandlerFunc {
	return func(ctx context.Context, s Services, c cmdargs.Call) (bson.D, error) {
		m, err := s.migrations(c)
		if err != nil {
			return nil, err
		}
		id, err := c.String(c.Name)
		if err != nil {
			return nil, err
		}
		return call(ctx, m, c, id)
	}
}

func recvChunkStatus(_ context.Context, m *shardstate.Migrations, _ cmdargs.Call, id string) (bson.D, error) {
	return m.RecvStatus(id), nil
}

func recvChunkCommit(ctx context.Context, m *shardstate.Migrations, _ cmdargs.Call, id string) (bson.D, error) {
	return bson.D{}, m.RecvCommit(ctx, id)
}

func recvChunkRelease(ctx context.Context, m *shardstate.Migrations, c cmdargs.Call, id string) (bson.D, error) {
	ns, err := c.String("nss")
	if err != nil {
		return nil, err
	}
	return bson.D{}, m.RecvRelease(ctx, id, ns)
}

func recvChunkAbort(_ context.Context, m *shardstate.Migrations, _ cmdargs.Call, id string) (bson.D, error) {
	return bson.D{}, m.RecvAbort(id)
}

// numberedPull is a migration command that answers the next batch of a
// pull numbered by its seq (the same seq again: the same batch), shaped
// by answer.
func numberedPull[T any](pull func(m *shardstate.Migrations, id string, seq int64) (T, error), answer func(T) bson.D) migrationCall {
	return func(_ context.Context, m *shardstate.Migrations, c cmdargs.Call, id string) (bson.D, error) {
		seq, err := requestSeq(c)
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
func requestSeq(c cmdargs.Call) (int64, error) {
	v, ok := bsonutil.Field(c.Body, "seq")
	if !ok {
		return 0, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.seq' is missing but a required field", c.Name)
	}
	return cmdargs.Int64(c.Name, "seq", v)
}

func migrationDocs(docs []bson.D) bson.A {
	out := make(bson.A, len(docs))
	for i, d := range docs {
		out[i] = d
	}
	return out
}
