package shardcmds

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/configsvr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// The config server's side of migrations: the commits of a move and of
// a split, and the balancer's status, each run by internal/configsvr.

// configServer returns the config server's service, refusing the
// command elsewhere with mongod's words.
func (s Services) configServer(c cmdargs.Call) (*configsvr.Service, error) {
	if s.ConfigServer == nil {
		return nil, mongoerr.Newf(mongoerr.IllegalOperation, "%s can only be run on config servers", c.Name)
	}
	return s.ConfigServer, nil
}

func configsvrCommitChunkMigration(_ context.Context, s Services, c cmdargs.Call) (bson.D, error) {
	svc, err := s.configServer(c)
	if err != nil {
		return nil, err
	}
	var commit configsvr.MigrationCommit
	if commit.Namespace, err = c.String(c.Name); err != nil {
		return nil, err
	}
	if commit.Donor, err = c.String("fromShard"); err != nil {
		return nil, err
	}
	if commit.Recipient, err = c.String("toShard"); err != nil {
		return nil, err
	}
	chunk, err := c.OptDoc("migratedChunk")
	if err != nil {
		return nil, err
	}
	lo, _ := bsonutil.Field(chunk, "min")
	hi, _ := bsonutil.Field(chunk, "max")
	commit.Range.Min, _ = lo.(bson.D)
	commit.Range.Max, _ = hi.(bson.D)
	if commit.Range.Min == nil || commit.Range.Max == nil {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '_configsvrCommitChunkMigration.migratedChunk' is missing but a required field")
	}
	return bson.D{}, svc.CommitMigration(commit)
}

func configsvrCommitChunkSplit(_ context.Context, s Services, c cmdargs.Call) (bson.D, error) {
	svc, err := s.configServer(c)
	if err != nil {
		return nil, err
	}
	ns, err := c.String(c.Name)
	if err != nil {
		return nil, err
	}
	v, _ := bsonutil.Field(c.Body, "splitPoints")
	list, ok := v.(bson.A)
	if !ok || len(list) == 0 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "need to provide the split points to chunk over")
	}
	points := make([]bson.D, 0, len(list))
	for _, p := range list {
		d, isDoc := p.(bson.D)
		if !isDoc {
			return nil, mongoerr.WrongType(c.Name, "splitPoints", p, "object")
		}
		points = append(points, d)
	}
	return bson.D{}, svc.CommitSplit(ns, points)
}

func configsvrBalancerStatus(_ context.Context, s Services, c cmdargs.Call) (bson.D, error) {
	svc, err := s.configServer(c)
	if err != nil {
		return nil, err
	}
	return svc.Status(), nil
}
