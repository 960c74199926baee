package shardstate

import (
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/ddl"
	"github.com/mayflydb/mayfly/internal/shardremote"
)

// copyIndexes creates on this shard, before the first document arrives,
// the donor's indexes of the collection that this shard lacks, as
// mongod's recipient does. A shard that held none of the collection when
// it was sharded or indexed (one added later) would otherwise serve the
// range it receives by collection scans, and never expire what a TTL
// index covers.
func (m *Migrations) copyIndexes(ctx context.Context, rc *receiver) error {
	db, name, _ := strings.Cut(rc.req.Namespace, ".")
	reply, err := shardremote.RunOn(ctx, m.opts.Client, rc.req.From, db, bson.D{{Key: "listIndexes", Value: name},
		{Key: "cursor", Value: bson.D{{Key: "batchSize", Value: int32(catalog.MaxIndexes + 1)}}}})
	if err != nil {
		return fmt.Errorf("shardstate: the donor's indexes of %s: %w", rc.req.Namespace, err)
	}
	raws, _, err := shardremote.CursorBatch(reply)
	if err != nil {
		return fmt.Errorf("shardstate: the donor's indexes of %s: %w", rc.req.Namespace, err)
	}
	specs := make([]bson.D, 0, len(raws))
	for _, raw := range raws {
		var spec bson.D
		if err := bson.Unmarshal(raw, &spec); err != nil {
			return fmt.Errorf("shardstate: the donor's indexes of %s: %w", rc.req.Namespace, err)
		}
		if name, _ := bsonFieldAny(spec, "name"); name != "_id_" { // every collection has it
			specs = append(specs, spec)
		}
	}
	ixs, err := ddl.IndexSpecs(specs, nil)
	if err != nil {
		return fmt.Errorf("shardstate: the donor's indexes of %s: %w", rc.req.Namespace, err)
	}
	if _, err := rc.coll.CreateIndexesContext(ctx, ixs); err != nil {
		return fmt.Errorf("shardstate: create the donor's indexes of %s: %w", rc.req.Namespace, err)
	}
	return nil
}
