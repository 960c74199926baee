package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/configsvr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// The config server's side of migrations: the commits of a move and of
// a split, and the balancer's status, each run by internal/configsvr.

// configServer returns the config server's service, refusing the
// command elsewhere with mongod's words.
func (h *Handler) configServer(r *request) (*configsvr.Service, error) {
	if h.deps.ConfigServer == nil {
		return nil, mongoerr.Newf(mongoerr.IllegalOperation, "%s can only be run on config servers", r.name)
	}
	return h.deps.ConfigServer, nil
}

func cmdConfigsvrCommitChunkMigration(h *Handler, r *request) (bson.D, error) {
	svc, err := h.configServer(r)
	if err != nil {
		return nil, err
	}
	var c configsvr.MigrationCommit
	if c.Namespace, err = stringField(r, r.name); err != nil {
		return nil, err
	}
	if c.Donor, err = stringField(r, "fromShard"); err != nil {
		return nil, err
	}
	if c.Recipient, err = stringField(r, "toShard"); err != nil {
		return nil, err
	}
	chunk, err := optDoc(r, "migratedChunk")
	if err != nil {
		return nil, err
	}
	lo, _ := bsonutil.Field(chunk, "min")
	hi, _ := bsonutil.Field(chunk, "max")
	c.Range.Min, _ = lo.(bson.D)
	c.Range.Max, _ = hi.(bson.D)
	if c.Range.Min == nil || c.Range.Max == nil {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '_configsvrCommitChunkMigration.migratedChunk' is missing but a required field")
	}
	return bson.D{}, svc.CommitMigration(c)
}

func cmdConfigsvrCommitChunkSplit(h *Handler, r *request) (bson.D, error) {
	svc, err := h.configServer(r)
	if err != nil {
		return nil, err
	}
	ns, err := stringField(r, r.name)
	if err != nil {
		return nil, err
	}
	v, _ := bsonutil.Field(r.body, "splitPoints")
	list, ok := v.(bson.A)
	if !ok || len(list) == 0 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "need to provide the split points to chunk over")
	}
	points := make([]bson.D, 0, len(list))
	for _, p := range list {
		d, isDoc := p.(bson.D)
		if !isDoc {
			return nil, wrongType(r.name, "splitPoints", p, "object")
		}
		points = append(points, d)
	}
	return bson.D{}, svc.CommitSplit(ns, points)
}

func cmdConfigsvrBalancerStatus(h *Handler, r *request) (bson.D, error) {
	svc, err := h.configServer(r)
	if err != nil {
		return nil, err
	}
	return svc.Status(), nil
}
