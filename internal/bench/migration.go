package bench

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The migration phase measures chunk migrations between shards of this
// build (issue #39): how fast one move carries a populated chunk and
// what it costs each side, what moving chunks back and forth costs the
// session workload and expiry, and how soon a shard added under load
// takes its share of the operations.

// MigrationResult is the migration phase.
type MigrationResult struct {
	Move     *MoveResult     `json:"move,omitempty"`
	Moving   *MovingResult   `json:"moving,omitempty"`
	AddShard *AddShardResult `json:"add_shard,omitempty"`
}

// MigrationSpec is what a migration job needs to know of its cluster.
type MigrationSpec struct {
	// Shards are the cluster's shards in order (sh0, sh1, ...); an
	// add-shard job's last one is the shard it adds.
	Shards    []ShardRef `json:"shards"`
	RouterPID int        `json:"router_pid"`
	// ChunksPerShard is how many equal chunks of the sessions collection
	// each shard started with (sessionChunkBounds).
	ChunksPerShard int `json:"chunks_per_shard"`
	// Docs are the documents a move-chunk job loads into the chunk it
	// moves.
	Docs int `json:"docs,omitempty"`
	// Window is each of a moving job's windows; Expiring documents expire
	// evenly over the second, sampled every PollEvery until MaxDrain after.
	Window    time.Duration `json:"window,omitempty"`
	Expiring  int           `json:"expiring,omitempty"`
	PollEvery time.Duration `json:"poll_every,omitempty"`
	MaxDrain  time.Duration `json:"max_drain,omitempty"`
	// MaxWait bounds an add-shard job's wait for the new shard's share.
	MaxWait time.Duration `json:"max_wait,omitempty"`
}

// ShardRef is one shard's name, its primary's address and process.
type ShardRef struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	PID  int    `json:"pid"`
}

const (
	// movingChunksPerShard is how many chunks of the sessions each shard
	// holds while chunks move back and forth: 3,125 sessions each of
	// 100,000, small enough for a move to take seconds, so that a window
	// sees several.
	movingChunksPerShard = 16
	// addShardChunksPerShard is 6 on each of two shards, so that a chunk
	// count balancer leaves 4 on each of three: a third of the key space
	// each (Mayfly's balancer balances chunk counts, not data size).
	addShardChunksPerShard = 6
	// Names of the collections the phase adds beside the sessions.
	movedColl    = "moved"
	expiringColl = "expiring"
)

// migrationPhase runs the moves on an uncapped two-shard cluster, then
// the added shard on a capped one.
func (m *modeRun) migrationPhase(ctx context.Context) (*MigrationResult, error) {
	out := &MigrationResult{}
	if err := m.movesOnTwoShards(ctx, out); err != nil {
		return out, err
	}
	var err error
	if out.AddShard, err = m.addShardUnderLoad(ctx); err != nil {
		return out, fmt.Errorf("third shard under load: %w", err)
	}
	return out, nil
}

// movesOnTwoShards measures, on one uncapped cluster of two shards, the
// session workload without and with chunks moving, then one move of a
// populated chunk on the idle cluster. The shards delete a range they
// gave away at once (orphanCleanupDelaySecs 0, against mongod's 900 s),
// so that a chunk can come back a few moves later: a recipient waits
// for no range deletion to overlap what it receives.
func (m *modeRun) movesOnTwoShards(ctx context.Context, out *MigrationResult) error {
	c, err := m.startClusterWith(ctx, clusterSpec{shards: 2,
		shardFlags: []string{"--setParameter", "orphanCleanupDelaySecs=0"}})
	if err != nil {
		return err
	}
	defer c.stop()
	if err := c.prepareSessions(ctx, movingChunksPerShard, false); err != nil {
		return err
	}
	if err := c.shardOnToken(ctx, expiringColl); err != nil {
		return err
	}
	if err := m.loadCluster(ctx, c, m.cfg.Sizes.Sessions); err != nil {
		return err
	}
	if out.Moving, err = m.movingRun(ctx, c); err != nil {
		return fmt.Errorf("sessions while chunks move: %w", err)
	}
	if out.Move, err = m.moveRun(ctx, c); err != nil {
		return fmt.Errorf("one move of %d documents: %w", m.cfg.Sizes.MigrateDocs, err)
	}
	return nil
}

// movingRun runs the session workload through the router for a window
// without migrations and one with chunks moving back and forth.
func (m *modeRun) movingRun(ctx context.Context, c *clusterRun) (*MovingResult, error) {
	sz := m.cfg.Sizes
	spec := c.spec(movingChunksPerShard)
	spec.Window, spec.Expiring, spec.PollEvery, spec.MaxDrain = sz.MigrateWindow, sz.MigrateExpiring, sz.StormPoll, sz.StormMaxDrain
	res, err := m.job(ctx, Job{Kind: jobMoving, Addr: c.router.dialAddr(), Clients: sz.Clients, Count: sz.Sessions,
		Warmup: sz.Warmup, Duration: 2*sz.MigrateWindow + sz.StormMaxDrain, Migration: &spec})
	if err != nil {
		return nil, err
	}
	r := res.Moving
	m.logf("sessions through the router: %.0f ops/s without migrations, %.0f while chunks moved (%d moves, %d failed); expiry lateness p99 ≤ %.0f ms without, %.0f ms with, all deleted %v",
		r.Without.OpsPerSec, r.With.OpsPerSec, r.Moves.Moves, r.Moves.Failed, r.LatenessWithout.Lateness.Upper.P99Ms,
		r.LatenessWith.Lateness.Upper.P99Ms, r.AllDeleted)
	return r, nil
}

// moveRun loads a chunk of MigrateDocs documents on shard 0 and moves it
// to shard 1, timing the move and each side's CPU.
func (m *modeRun) moveRun(ctx context.Context, c *clusterRun) (*MoveResult, error) {
	sz := m.cfg.Sizes
	spec := c.spec(0)
	spec.Docs = sz.MigrateDocs
	res, err := m.job(ctx, Job{Kind: jobMoveChunk, Addr: c.router.dialAddr(), Count: sz.MigrateDocs, Migration: &spec})
	if err != nil {
		return nil, err
	}
	r := res.Move
	m.logf("moveChunk of %d documents: %.1f s, %.0f documents/s; CPU s per 1,000 documents: donor %.3f, recipient %.3f, router %.3f",
		r.Docs, r.Seconds, r.DocsPerSec, r.DonorCPUPerK, r.RecipientCPUPerK, r.RouterCPUPerK)
	return r, nil
}

// addShardUnderLoad loads two capped shards, starts a third, and runs
// the session workload while the job adds it and the balancer moves
// chunks to it.
func (m *modeRun) addShardUnderLoad(ctx context.Context) (*AddShardResult, error) {
	sz := m.cfg.Sizes
	c, err := m.startCluster(ctx, 2, scalingCores)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	if err := c.prepareSessions(ctx, addShardChunksPerShard, true); err != nil {
		return nil, err
	}
	if err := m.loadCluster(ctx, c, sz.AddShardSessions); err != nil {
		return nil, err
	}
	if _, err := m.startShard(ctx, c, scalingCores); err != nil {
		return nil, err
	}
	spec := c.spec(addShardChunksPerShard)
	spec.MaxWait = sz.AddShardMax
	before, err := c.throttling()
	if err != nil {
		return nil, err
	}
	res, err := m.job(ctx, Job{Kind: jobAddShard, Addr: c.router.dialAddr(), Clients: sz.Clients, Count: sz.AddShardSessions,
		Warmup: sz.Warmup, Duration: sz.Duration + sz.AddShardMax, Migration: &spec})
	if err != nil {
		return nil, err
	}
	r := res.AddShard
	r.CoresPerShard = scalingCores
	if r.Throttling, err = c.throttlingSince(before); err != nil {
		return nil, err
	}
	m.logf("third shard at %.1f core: a third of the operations %s after addShard; chunks %v; all shards' ops/s %.0f before; shards throttled in %s of periods",
		scalingCores, fmtReached(r), r.ChunksAfter, r.OpsBefore, fmtShares(r.Throttling))
	return r, nil
}

// loadCluster preloads n sessions through the router, then waits for
// every shard to go idle (the load waits only for the router).
func (m *modeRun) loadCluster(ctx context.Context, c *clusterRun, n int) error {
	if _, err := m.load(ctx, c.router, targetMongo, n); err != nil {
		return err
	}
	for _, s := range c.shards {
		if _, err := waitIdle(ctx, s.pid(), settleLimit); err != nil {
			return fmt.Errorf("%s after the load: %w", s.name, err)
		}
	}
	return nil
}

func fmtReached(r *AddShardResult) string {
	if !r.Reached {
		return fmt.Sprintf("not reached in %.0f s", r.WaitedSeconds)
	}
	return fmt.Sprintf("%.1f s", r.ReachedSeconds)
}

// spec describes the cluster to a migration job.
func (c *clusterRun) spec(chunksPerShard int) MigrationSpec {
	sp := MigrationSpec{RouterPID: c.router.pid(), ChunksPerShard: chunksPerShard}
	for i, s := range c.shards {
		sp.Shards = append(sp.Shards, ShardRef{Name: shardName(i), Addr: s.addr, PID: s.pid()})
	}
	return sp
}

// prepareSessions splits the (empty) sessions collection into perShard
// equal chunks on each shard, with the balancer stopped so that it moves
// nothing half-way; balance leaves it running afterwards.
func (c *clusterRun) prepareSessions(ctx context.Context, perShard int, balance bool) error {
	cl, err := dialMongo(ctx, c.router.addr, 1)
	if err != nil {
		return err
	}
	defer cl.Disconnect(context.WithoutCancel(ctx))
	admin := cl.Database("admin")
	cmds := []bson.D{{{Key: "balancerStop", Value: 1}}}
	bounds := sessionChunkBounds(perShard)
	for i, b := range bounds[1 : len(bounds)-1] {
		if i+1 == perShard {
			continue // the bound between the shards' first chunks
		}
		cmds = append(cmds, bson.D{{Key: "split", Value: benchDB + "." + sessionsColl}, {Key: "middle", Value: b}})
	}
	if balance {
		cmds = append(cmds, bson.D{{Key: "balancerStart", Value: 1}})
	}
	for _, cmd := range cmds {
		if err := admin.RunCommand(ctx, cmd).Err(); err != nil {
			return fmt.Errorf("%s %v: %w", cmd[0].Key, cmd, err)
		}
	}
	return nil
}

// shardOnToken shards an empty collection of the bench database on the
// hashed token: one chunk on each shard.
func (c *clusterRun) shardOnToken(ctx context.Context, coll string) error {
	cl, err := dialMongo(ctx, c.router.addr, 1)
	if err != nil {
		return err
	}
	defer cl.Disconnect(context.WithoutCancel(ctx))
	return shardCollection(ctx, cl, coll)
}
