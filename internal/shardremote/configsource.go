package shardremote

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// configReadPreference lets any config member answer, the primary first:
// a config secondary's majority-committed metadata is as good for a
// refresh, and the read goes on while the config set elects.
var configReadPreference = bson.D{{Key: "mode", Value: "primaryPreferred"}}

// Runner runs a command on a host and returns its reply whatever its ok;
// the error is for what kept the command from a reply. A
// wireclient.Client is one (this package does not import it, so that the
// server's assembly, which builds a shard's State, stays below the
// packages wireclient's tests start servers with).
type Runner interface {
	Run(ctx context.Context, host, db string, cmd bson.D) (bson.D, error)
}

// ConfigSource reads config.collections, config.chunks and
// config.databases from the config server members named in the shard's
// identity, trying each in turn.
type ConfigSource struct {
	Client Runner
	Hosts  []string
	// Linearizable makes each read a linearizable one on the config
	// primary instead of a majority one on any member: a read that
	// decides a migration's outcome must see every write acknowledged
	// before it began (docs/design/0014, "Recovery").
	Linearizable bool
}

// linearizableReadPreference sends a linearizable read to the primary,
// the only member that may serve one.
var linearizableReadPreference = bson.D{{Key: "mode", Value: "primary"}}

// Collection reads ns's config.collections document and its chunks;
// found is false for a collection the cluster does not track as sharded.
func (s ConfigSource) Collection(ctx context.Context, ns string) (shardmeta.Collection, []shardmeta.Chunk, bool, error) {
	var coll shardmeta.Collection
	docs, err := s.FindAll(ctx, shardmeta.CollectionsCollection, bson.D{{Key: "_id", Value: ns}})
	if err != nil || len(docs) == 0 {
		return coll, nil, false, err
	}
	if err := shardmeta.Decode(docs[0], &coll); err != nil {
		return coll, nil, false, fmt.Errorf("shardstate: config.collections %s: %w", ns, err)
	}
	if coll.Unsplittable {
		return coll, nil, false, nil // tracked, not sharded: no chunks to filter by
	}
	raw, err := s.FindAll(ctx, shardmeta.ChunksCollection, bson.D{{Key: "uuid", Value: coll.UUID}})
	if err != nil {
		return coll, nil, false, err
	}
	chunks := make([]shardmeta.Chunk, len(raw))
	for i, r := range raw {
		if err := shardmeta.Decode(r, &chunks[i]); err != nil {
			return coll, nil, false, fmt.Errorf("shardstate: config.chunks of %s: %w", ns, err)
		}
	}
	return coll, chunks, true, nil
}

// Database reads db's config.databases document.
func (s ConfigSource) Database(ctx context.Context, db string) (shardmeta.Database, bool, error) {
	var out shardmeta.Database
	docs, err := s.FindAll(ctx, shardmeta.DatabasesCollection, bson.D{{Key: "_id", Value: db}})
	if err != nil || len(docs) == 0 {
		return out, false, err
	}
	if err := shardmeta.Decode(docs[0], &out); err != nil {
		return out, false, fmt.Errorf("shardstate: config.databases %s: %w", db, err)
	}
	return out, true, nil
}

// findAll runs a majority find on the config database and drains its
// cursor, on the first config member that answers.
func (s ConfigSource) FindAll(ctx context.Context, coll string, filter bson.D) ([]bson.Raw, error) {
	last := mongoerr.New(mongoerr.HostUnreachable, "could not refresh the routing metadata: no config server is known")
	for _, host := range s.Hosts {
		docs, err := s.findOn(ctx, host, coll, filter)
		if err == nil {
			return docs, nil
		}
		last = mongoerr.As(err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

func (s ConfigSource) findOn(ctx context.Context, host, coll string, filter bson.D) ([]bson.Raw, error) {
	cmd := append(bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: filter}}, s.readOptions()...)
	var docs []bson.Raw
	for {
		reply, err := s.Client.Run(ctx, host, "config", cmd)
		if err != nil {
			return nil, unreachable(host, err)
		}
		if err := commandFailure(reply); err != nil {
			return nil, err
		}
		batch, id, err := CursorBatch(reply)
		if err != nil {
			return nil, fmt.Errorf("shardstate: read config.%s on %s: %w", coll, host, err)
		}
		docs = append(docs, batch...)
		if id == 0 {
			return docs, nil
		}
		cmd = bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: coll}}
	}
}

// readOptions are a find's readConcern and $readPreference.
func (s ConfigSource) readOptions() bson.D {
	if s.Linearizable {
		return bson.D{{Key: "readConcern", Value: bson.D{{Key: "level", Value: "linearizable"}}},
			{Key: "$readPreference", Value: linearizableReadPreference}}
	}
	return bson.D{{Key: "readConcern", Value: bson.D{{Key: "level", Value: "majority"}}},
		{Key: "$readPreference", Value: configReadPreference}}
}

// cursorBatch reads a find or getMore reply's documents and cursor id.
func CursorBatch(reply bson.D) ([]bson.Raw, int64, error) {
	raw, err := bson.Marshal(reply)
	if err != nil {
		return nil, 0, err
	}
	var r struct {
		Cursor struct {
			ID         int64      `bson:"id"`
			FirstBatch []bson.Raw `bson:"firstBatch"`
			NextBatch  []bson.Raw `bson:"nextBatch"`
		} `bson:"cursor"`
	}
	if err := bson.Unmarshal(raw, &r); err != nil {
		return nil, 0, err
	}
	return append(r.Cursor.FirstBatch, r.Cursor.NextBatch...), r.Cursor.ID, nil
}

// unreachable is the error of a config member that gave no reply: the
// command fails as mongod's does when its config servers are out of
// reach, and the router may retry it.
func unreachable(host string, err error) error {
	return mongoerr.Newf(mongoerr.HostUnreachable, "could not refresh the routing metadata from the config server %s :: caused by :: %v", host, err)
}

// commandFailure is a config member's error reply, with its code, as
// the shard's own error.
func commandFailure(reply bson.D) error {
	ok, _ := bsonutil.Field(reply, "ok")
	if bsonutil.TrueValue(ok) {
		return nil
	}
	code, _ := bsonutil.Field(reply, "code")
	msg, _ := bsonutil.Field(reply, "errmsg")
	n, _ := code.(int32)
	return mongoerr.Newf(mongoerr.Code(n), "could not refresh the routing metadata :: caused by :: %v", msg)
}
