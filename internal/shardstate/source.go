package shardstate

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// Source reads the routing metadata of the cluster: what a shard's cache
// is refreshed from.
type Source interface {
	// Collection returns ns's config.collections document and its chunks;
	// found is false for a collection the cluster does not track as
	// sharded.
	Collection(ctx context.Context, ns string) (coll shardmeta.Collection, chunks []shardmeta.Chunk, found bool, err error)
	// Database returns db's config.databases document; found is false
	// when the cluster has no such database.
	Database(ctx context.Context, db string) (shardmeta.Database, bool, error)
}

// configReadPreference lets any config member answer, the primary first:
// a config secondary's majority-committed metadata is as good for a
// refresh, and the read goes on while the config set elects.
var configReadPreference = bson.D{{Key: "mode", Value: "primaryPreferred"}}

// ConfigSource reads config.collections, config.chunks and
// config.databases from the config server members named in the shard's
// identity, trying each in turn.
type ConfigSource struct {
	Client *wireclient.Client
	Hosts  []string
}

// Collection implements Source.
func (s ConfigSource) Collection(ctx context.Context, ns string) (shardmeta.Collection, []shardmeta.Chunk, bool, error) {
	var coll shardmeta.Collection
	docs, err := s.findAll(ctx, shardmeta.CollectionsCollection, bson.D{{Key: "_id", Value: ns}})
	if err != nil || len(docs) == 0 {
		return coll, nil, false, err
	}
	if err := shardmeta.Decode(docs[0], &coll); err != nil {
		return coll, nil, false, fmt.Errorf("shardstate: config.collections %s: %w", ns, err)
	}
	if coll.Unsplittable {
		return coll, nil, false, nil // tracked, not sharded: no chunks to filter by
	}
	raw, err := s.findAll(ctx, shardmeta.ChunksCollection, bson.D{{Key: "uuid", Value: coll.UUID}})
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

// Database implements Source.
func (s ConfigSource) Database(ctx context.Context, db string) (shardmeta.Database, bool, error) {
	var out shardmeta.Database
	docs, err := s.findAll(ctx, shardmeta.DatabasesCollection, bson.D{{Key: "_id", Value: db}})
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
func (s ConfigSource) findAll(ctx context.Context, coll string, filter bson.D) ([]bson.Raw, error) {
	var last error
	for _, host := range s.Hosts {
		docs, err := s.findOn(ctx, host, coll, filter)
		if err == nil {
			return docs, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, configUnreachable(last)
}

func (s ConfigSource) findOn(ctx context.Context, host, coll string, filter bson.D) ([]bson.Raw, error) {
	cmd := bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: filter},
		{Key: "readConcern", Value: bson.D{{Key: "level", Value: "majority"}}},
		{Key: "$readPreference", Value: configReadPreference}}
	var docs []bson.Raw
	for {
		reply, err := s.Client.Run(ctx, host, "config", cmd)
		if err == nil {
			err = wireclient.ReplyError(reply)
		}
		if err != nil {
			return nil, fmt.Errorf("shardstate: read config.%s on %s: %w", coll, host, err)
		}
		batch, id, err := cursorBatch(reply)
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

// cursorBatch reads a find or getMore reply's documents and cursor id.
func cursorBatch(reply bson.D) ([]bson.Raw, int64, error) {
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

// configUnreachable is the error of a refresh no config member answered:
// the command fails as mongod's does when its config servers are out of
// reach, and the router may retry it.
func configUnreachable(err error) error {
	var netErr *wireclient.NetworkError
	if errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) {
		return mongoerr.Newf(mongoerr.HostUnreachable, "could not refresh the routing metadata from the config servers :: caused by :: %v", err)
	}
	if err == nil {
		return mongoerr.New(mongoerr.HostUnreachable, "could not refresh the routing metadata: no config server is known")
	}
	return err
}
