// Package replcmds answers the replica set's commands — replSetInitiate,
// replSetGetStatus, replSetGetConfig, replSetReconfig, replSetStepDown,
// replSetFreeze, Mayfly's member-to-member replSetRaft and
// replSetSnapshot, the mayflyReplPartition test command — and gives
// internal/repl's errors MongoDB's codes (Error). It also waits, for
// internal/commands, for the write and read concerns a replica set
// member applies to every command (concern.go). Without --replSet the
// replSet* commands answer NoReplicationEnabled, as mongod's do.
package replcmds

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/repl"
	"github.com/mayflydb/mayfly/internal/shardcmds"
)

// Member is what the replica set commands need of the server.
type Member struct {
	// Repl is the member's replica set; nil on a standalone.
	Repl *repl.Replica
	// ClusterRole is --configsvr's or --shardsvr's role: a config
	// server's replica set config must say configsvr: true.
	ClusterRole string
	// TestCommands is enableTestCommands, which mayflyReplPartition needs.
	TestCommands bool
}

// HandlerFunc runs one replica set command: its arguments in c, the
// command's context in ctx.
type HandlerFunc func(ctx context.Context, m Member, c cmdargs.Call) (bson.D, error)

// Commands are the replica set commands, by name. Each runs on any
// member, whatever its state (mongod's kAlways with maintenanceOk).
func Commands() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"replSetInitiate":     replSetInitiate,
		"replSetGetStatus":    replSetGetStatus,
		"replSetGetConfig":    replSetGetConfig,
		"replSetReconfig":     replSetReconfig,
		"replSetStepDown":     replSetStepDown,
		"replSetFreeze":       replSetFreeze,
		"replSetRaft":         replSetRaft,
		"replSetSnapshot":     replSetSnapshot,
		"mayflyReplPartition": replPartition,
	}
}

func errNoReplication() error {
	return mongoerr.New(mongoerr.NoReplicationEnabled, "This node was not started with replication enabled.")
}

func replSetInitiate(_ context.Context, m Member, c cmdargs.Call) (bson.D, error) {
	if m.Repl == nil {
		return nil, errNoReplication()
	}
	v, _ := bsonutil.Field(c.Body, c.Name)
	cfg, _ := v.(bson.D)
	if len(cfg) == 0 {
		cfg = nil
	}
	if err := shardcmds.CheckConfigServerFlag(m.ClusterRole, cfg); err != nil {
		return nil, err
	}
	if err := m.Repl.Initiate(cfg); err != nil {
		return nil, Error(err)
	}
	return bson.D{}, nil
}

func replSetGetStatus(_ context.Context, m Member, _ cmdargs.Call) (bson.D, error) {
	if m.Repl == nil {
		return nil, mongoerr.New(mongoerr.NoReplicationEnabled, "not running with --replSet")
	}
	st, err := m.Repl.Status()
	return st, Error(err)
}

func replSetGetConfig(_ context.Context, m Member, _ cmdargs.Call) (bson.D, error) {
	if m.Repl == nil {
		return nil, errNoReplication()
	}
	cfg := m.Repl.Config()
	if cfg == nil {
		return nil, Error(repl.ErrNotYetInitialized)
	}
	return bson.D{{Key: "config", Value: cfg.Doc()}}, nil
}

func replSetReconfig(_ context.Context, m Member, c cmdargs.Call) (bson.D, error) {
	if m.Repl == nil {
		return nil, errNoReplication()
	}
	v, _ := bsonutil.Field(c.Body, c.Name)
	cfg, ok := v.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'replSetReconfig' is the wrong type, expected type 'object'")
	}
	if err := shardcmds.CheckConfigServerFlag(m.ClusterRole, cfg); err != nil {
		return nil, err
	}
	return bson.D{}, Error(m.Repl.Reconfig(cfg))
}

func replSetStepDown(ctx context.Context, m Member, c cmdargs.Call) (bson.D, error) {
	if m.Repl == nil {
		return nil, errNoReplication()
	}
	v, _ := bsonutil.Field(c.Body, c.Name)
	secs, err := cmdargs.Int64(c.Name, c.Name, v)
	if err != nil {
		return nil, err
	}
	catchUp, err := c.OptInt("secondaryCatchUpPeriodSecs", 10)
	if err != nil {
		return nil, err
	}
	if catchUp > secs {
		return nil, mongoerr.New(mongoerr.BadValue, "stepdown period must be longer than secondaryCatchUpPeriodSecs")
	}
	err = m.Repl.StepDown(ctx, time.Duration(secs)*time.Second, time.Duration(catchUp)*time.Second)
	return bson.D{}, Error(err)
}

func replSetFreeze(_ context.Context, m Member, c cmdargs.Call) (bson.D, error) {
	if m.Repl == nil {
		return nil, errNoReplication()
	}
	v, _ := bsonutil.Field(c.Body, c.Name)
	secs, err := cmdargs.Int64(c.Name, c.Name, v)
	if err != nil {
		return nil, err
	}
	return bson.D{}, Error(m.Repl.Freeze(time.Duration(secs) * time.Second))
}

// replSetRaft takes raft messages from another member.
func replSetRaft(_ context.Context, m Member, c cmdargs.Call) (bson.D, error) {
	if m.Repl == nil {
		return nil, errNoReplication()
	}
	if err := m.Repl.Receive(c.Body); err != nil {
		return nil, mongoerr.New(mongoerr.InvalidReplicaSetConfig, err.Error())
	}
	return bson.D{}, nil
}

// replSetSnapshot takes a snapshot chunk from the primary.
func replSetSnapshot(_ context.Context, m Member, c cmdargs.Call) (bson.D, error) {
	if m.Repl == nil {
		return nil, errNoReplication()
	}
	if err := m.Repl.ReceiveSnapshot(c.Body); err != nil {
		return nil, mongoerr.New(mongoerr.OperationFailed, err.Error())
	}
	return bson.D{}, nil
}

// replPartition is a test command (enableTestCommands): the member
// drops every message to and from the members listed, until called with
// none.
func replPartition(_ context.Context, m Member, c cmdargs.Call) (bson.D, error) {
	if !m.TestCommands {
		return nil, mongoerr.Newf(mongoerr.CommandNotFound, "no such command: '%s'", c.Name)
	}
	if m.Repl == nil {
		return nil, errNoReplication()
	}
	v, _ := bsonutil.Field(c.Body, c.Name)
	arr, _ := v.(bson.A)
	var hosts []string
	for _, x := range arr {
		if s, ok := x.(string); ok {
			hosts = append(hosts, s)
		}
	}
	m.Repl.Partition(hosts)
	return bson.D{}, nil
}
