package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/cpucap"
)

// The sharded phase measures `mayfly route`: what the router costs the
// session workload against its one shard directly, and how the workload
// scales over 1, 2 and 3 shards, each capped to the same share of a core.

// ShardedResult is the sharded phase.
type ShardedResult struct {
	// Overhead are rounds of the session workload through the router and
	// directly on its one uncapped shard, alternating (Server "router" or
	// "direct").
	Overhead []*SessionsResult `json:"overhead,omitempty"`
	// CoresPerShard is each shard's CPU cap in the scaling runs.
	CoresPerShard float64       `json:"cores_per_shard"`
	Scaling       []*ScalingRun `json:"scaling,omitempty"`
}

// ScalingRun is the workloads on a cluster of Shards capped shards.
type ScalingRun struct {
	Shards int `json:"shards"`
	// Sessions are targeted by the shard key (a hashed token), from the
	// sessions phase's clients for each shard: the round of SessionsRounds
	// with the median rate.
	Sessions *SessionsResult `json:"sessions"`
	// SessionsRounds are every window of that workload on this cluster.
	SessionsRounds []*SessionsResult `json:"sessions_rounds,omitempty"`
	// SessionsFixedClients is the same workload from the sessions
	// phase's clients however many shards there are (on one shard, the
	// run above).
	SessionsFixedClients *SessionsResult `json:"sessions_fixed_clients,omitempty"`
	// Scans are unfiltered finds, which every shard answers: the control
	// that adding shards does not speed up.
	Scans *WindowResult `json:"scans"`
	// Throttling is each shard's over the sessions run.
	Throttling []cpucap.Throttling `json:"throttling"`
}

const (
	// scalingCores caps each shard in the scaling runs; GOMAXPROCS is 1 to
	// match, so the runtime does not plan for cores it cannot use.
	scalingCores = 0.3
	// shardedColl's shard key is the token, hashed: every session
	// operation names one shard.
	shardKeyField = "token"
	// scalingShards is the largest cluster of the scaling runs.
	scalingShards = 3
	// scalingRounds is how many windows of the targeted workload each
	// cluster runs: a capped shard's rate moves by a fifth from one
	// window to the next (a compaction inside its 0.3 core takes a share
	// of the window), and the median is steadier than any one window.
	scalingRounds = 3
	// scanLimit is how many documents an unfiltered find asks for.
	scanLimit   = 10
	routerName  = "router"
	directName  = "direct"
	configSetID = "cfg"
)

// shardedPhase runs the overhead rounds, then the scaling runs.
func (m *modeRun) shardedPhase(ctx context.Context) (*ShardedResult, error) {
	out := &ShardedResult{CoresPerShard: scalingCores}
	var err error
	if out.Overhead, err = m.routerOverhead(ctx); err != nil {
		return out, fmt.Errorf("router overhead: %w", err)
	}
	for n := 1; n <= scalingShards; n++ {
		run, err := m.scalingRun(ctx, n)
		if err != nil {
			return out, fmt.Errorf("%d capped shards: %w", n, err)
		}
		out.Scaling = append(out.Scaling, run)
	}
	return out, nil
}

// routerOverhead loads one uncapped shard through the router and runs the
// session workload in rounds alternating between the router and the
// shard itself.
func (m *modeRun) routerOverhead(ctx context.Context) ([]*SessionsResult, error) {
	c, err := m.startCluster(ctx, 1, 0)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	if err := m.loadCluster(ctx, c, m.cfg.Sizes.Sessions); err != nil {
		return nil, err
	}
	var out []*SessionsResult
	for _, viaRouter := range baselineOrder(max(m.cfg.BaselineRounds, 2) * 2) {
		s, name, behind := c.shards[0], directName, 0
		if viaRouter {
			s, name, behind = c.router, routerName, c.shards[0].pid()
		}
		res, err := m.sessionsJob(ctx, s, Job{Kind: jobSessions, Target: targetMongo, Addr: s.dialAddr(),
			ServerPID: s.pid(), BehindPID: behind, Clients: m.cfg.Sizes.Clients})
		if err != nil {
			return out, fmt.Errorf("sessions %s: %w", name, err)
		}
		res.Server = name
		out = append(out, res)
	}
	return out, nil
}

// scalingRun runs the session workload and the scans through the router
// to n shards, each capped at scalingCores.
func (m *modeRun) scalingRun(ctx context.Context, n int) (*ScalingRun, error) {
	c, err := m.startCluster(ctx, n, scalingCores)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	if err := m.loadCluster(ctx, c, m.cfg.Sizes.Sessions); err != nil {
		return nil, err
	}
	run := &ScalingRun{Shards: n}
	before, err := c.throttling()
	if err != nil {
		return nil, err
	}
	// Each shard is offered the load one server has in the sessions
	// phase. With a fixed number of clients, they gather at whichever
	// shard its cap has paused (for up to 70 ms of every 100), and the
	// other shards wait for work: the fixed-client run shows it.
	sz := m.cfg.Sizes
	for range scalingRounds {
		res, err := m.sessionsRunClients(ctx, c.router, targetMongo, 0, n*sz.Clients)
		if err != nil {
			return nil, err
		}
		run.SessionsRounds = append(run.SessionsRounds, res)
	}
	run.Sessions = medianRound(run.SessionsRounds)
	if run.Throttling, err = c.throttlingSince(before); err != nil {
		return nil, err
	}
	if n > 1 {
		if run.SessionsFixedClients, err = m.sessionsRun(ctx, c.router, targetMongo, 0); err != nil {
			return nil, err
		}
	}
	res, err := m.job(ctx, Job{Kind: jobScans, Addr: c.router.dialAddr(), Clients: sz.Clients,
		Warmup: sz.Warmup, Duration: sz.Duration})
	if err != nil {
		return nil, fmt.Errorf("scans: %w", err)
	}
	run.Scans = res.Scans
	m.logf("%d shards at %.1f core: sessions %.0f ops/s (median of %d) from %d clients, scans %.0f/s; shards throttled in %s of periods",
		n, scalingCores, run.Sessions.OpsPerSec, len(run.SessionsRounds), run.Sessions.Clients, run.Scans.OpsPerSec, fmtShares(run.Throttling))
	return run, nil
}

// medianRound is the round with the median rate (the lower middle of an
// even count).
func medianRound(rounds []*SessionsResult) *SessionsResult {
	sorted := slices.Clone(rounds)
	slices.SortFunc(sorted, func(a, b *SessionsResult) int { return cmp.Compare(a.OpsPerSec, b.OpsPerSec) })
	return sorted[(len(sorted)-1)/2]
}

func fmtShares(ts []cpucap.Throttling) string {
	s := ""
	for i, t := range ts {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%.0f %%", 100*t.ThrottledShare)
	}
	return s
}

// clusterRun is a config server, shards and a router, each a process of
// this build; every replica set has one member.
type clusterRun struct {
	config *server
	shards []*server
	groups []*cpucap.Group // one per shard when capped
	router *server
}

// clusterSpec is a cluster's layout: its shards, each shard's CPU cap
// (0: uncapped) and flags every shard starts with.
type clusterSpec struct {
	shards     int
	cores      float64
	shardFlags []string
}

// startCluster starts a cluster of n shards, each capped at cores (0:
// uncapped), with one collection sharded on the hashed token.
func (m *modeRun) startCluster(ctx context.Context, n int, cores float64) (*clusterRun, error) {
	return m.startClusterWith(ctx, clusterSpec{shards: n, cores: cores})
}

// startClusterWith starts the cluster spec lays out, with the sessions
// collection sharded on the hashed token.
func (m *modeRun) startClusterWith(ctx context.Context, spec clusterSpec) (_ *clusterRun, err error) {
	c := &clusterRun{}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	if c.config, err = m.startMember(ctx, configSetID, nil, "--configsvr"); err != nil {
		return nil, err
	}
	for range spec.shards {
		if _, err := m.startShard(ctx, c, spec.cores, spec.shardFlags...); err != nil {
			return nil, err
		}
	}
	if c.router, err = m.startRouter(ctx, configSetID+"/"+c.config.addr); err != nil {
		return nil, err
	}
	return c, c.shardSessions(ctx)
}

// startShard starts the cluster's next shard, in its own group capped at
// cores when cores > 0; the cluster stops it with the others.
func (m *modeRun) startShard(ctx context.Context, c *clusterRun, cores float64, flags ...string) (*server, error) {
	i := len(c.shards)
	var g *cpucap.Group
	if cores > 0 {
		name := fmt.Sprintf("mayfly-bench-%d-%s-shard%d", os.Getpid(), m.mode, i)
		var err error
		if g, err = cpucap.New(name, cores, cpucap.DefaultPeriodUs); err != nil {
			return nil, err
		}
		c.groups = append(c.groups, g)
	}
	s, err := m.startMember(ctx, shardName(i), g, append([]string{"--shardsvr"}, flags...)...)
	if err != nil {
		return nil, err
	}
	c.shards = append(c.shards, s)
	return s, nil
}

func shardName(i int) string { return "sh" + strconv.Itoa(i) }

// startMember starts a one-member replica set named set, in group g when
// given (with GOMAXPROCS=1), and waits until it is primary.
func (m *modeRun) startMember(ctx context.Context, set string, g *cpucap.Group, flags ...string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	dir, err := mkdir(m.work, set)
	if err != nil {
		return nil, err
	}
	argv := append(mayflyArgv(m.mayflyBin, addr, filepath.Join(dir, "data")), "--replSet", set)
	argv = append(argv, flags...)
	if g != nil {
		argv = g.Wrap(argv, "GOMAXPROCS=1")
	}
	s, err := startServer(ctx, set, argv, addr, filepath.Join(dir, "mayfly.log"))
	if err != nil {
		return nil, err
	}
	rs := &replSetRun{m: m, members: []*server{s}, addrs: []string{addr}, name: set,
		configsvr: slices.Contains(flags, "--configsvr")}
	if err := rs.initiate(ctx); err != nil {
		return nil, errors.Join(err, s.stop())
	}
	return s, nil
}

// startRouter starts `mayfly route` over the config set, uncapped.
func (m *modeRun) startRouter(ctx context.Context, configDB string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	dir, err := mkdir(m.work, routerName)
	if err != nil {
		return nil, err
	}
	argv := []string{m.mayflyBin, "route", "--configdb", configDB, "--bind_ip", host, "--port", port, "--log-level", "warn"}
	return startServer(ctx, routerName, argv, addr, filepath.Join(dir, "route.log"))
}

// shardSessions adds the shards and shards the sessions collection on the
// hashed token, before any document is stored.
func (c *clusterRun) shardSessions(ctx context.Context) error {
	cl, err := dialMongo(ctx, c.router.addr, 1)
	if err != nil {
		return err
	}
	defer cl.Disconnect(context.WithoutCancel(ctx))
	admin := cl.Database("admin")
	cmds := []bson.D{}
	for i, s := range c.shards {
		cmds = append(cmds, bson.D{{Key: "addShard", Value: shardName(i) + "/" + s.addr}})
	}
	// The database's primary is named, so that an unsharded collection
	// (the migration phase's moved one) is known to live on shard 0.
	cmds = append(cmds, bson.D{{Key: "enableSharding", Value: benchDB}, {Key: "primaryShard", Value: shardName(0)}},
		bson.D{{Key: "shardCollection", Value: benchDB + "." + sessionsColl},
			{Key: "key", Value: bson.D{{Key: shardKeyField, Value: "hashed"}}}})
	for _, cmd := range cmds {
		if err := admin.RunCommand(ctx, cmd).Err(); err != nil {
			return fmt.Errorf("%s: %w", cmd[0].Key, err)
		}
	}
	return nil
}

// throttling reads every shard group's counters.
func (c *clusterRun) throttling() ([]cpucap.Throttling, error) {
	var out []cpucap.Throttling
	for _, g := range c.groups {
		t, err := g.Stat()
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// throttlingSince is every shard group's throttling since an earlier
// reading; a group made since counts from its start.
func (c *clusterRun) throttlingSince(before []cpucap.Throttling) ([]cpucap.Throttling, error) {
	after, err := c.throttling()
	if err != nil {
		return nil, err
	}
	var out []cpucap.Throttling
	for i := range after {
		var b cpucap.Throttling
		if i < len(before) {
			b = before[i]
		}
		out = append(out, after[i].Since(b))
	}
	return out, nil
}

// stop stops the router, the shards and the config server, then removes
// the groups.
func (c *clusterRun) stop() {
	all := append([]*server{c.router}, c.shards...)
	for _, s := range append(all, c.config) {
		if s != nil {
			_ = s.stop()
		}
	}
	for _, g := range c.groups {
		_ = g.Remove()
	}
}

// runScansJob runs unfiltered finds of scanLimit documents from j.Clients
// clients through the router for j.Duration after j.Warmup.
func runScansJob(ctx context.Context, j Job) (*WindowResult, error) {
	c, err := dialMongo(ctx, j.Addr, j.Clients)
	if err != nil {
		return nil, err
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	coll := c.Database(benchDB).Collection(sessionsColl)
	start := time.Now()
	win := span{start.Add(j.Warmup), start.Add(j.Warmup + j.Duration)}
	recs := make([]*recorder, j.Clients)
	errs := make([]error, j.Clients)
	done := make(chan int, j.Clients)
	for i := range recs {
		recs[i] = newRecorder(win)
		go func() {
			defer func() { done <- i }()
			for time.Now().Before(win.to) && ctx.Err() == nil {
				t0 := time.Now()
				var docs []bson.Raw
				cur, err := coll.Find(ctx, bson.D{}, options.Find().SetLimit(scanLimit))
				if err == nil {
					err = cur.All(ctx, &docs)
				}
				if err != nil {
					errs[i] = err
					return
				}
				recs[i].add(time.Now(), time.Since(t0))
			}
		}()
	}
	for range recs {
		<-done
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("unfiltered find: %w", err)
	}
	for _, r := range recs[1:] {
		recs[0].merge(r)
	}
	res := recs[0].result(0)
	return &res, nil
}
