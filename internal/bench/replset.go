package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// ReplSetResult is what a three-member replica set on this machine showed:
// the members share its cores and its one disk, so these are lower bounds
// of what three machines give.
type ReplSetResult struct {
	// Server is the build it ran on in rounds beside the previous build
	// (mayfly, mayfly-baseline).
	Server  string `json:"server,omitempty"`
	Members int    `json:"members"`
	// Majority is inserts with w: "majority" from Clients clients through
	// the seed list; the durable phase's j: true inserts on a standalone
	// server are what it is compared with.
	Majority *DurableResult `json:"majority_inserts"`
	// StormPrimary and StormSecondary are deletion lateness during an
	// expiry storm: on the primary, whose monitor deletes; on a secondary,
	// which applies the primary's deletions.
	StormDocs      int      `json:"storm_docs"`
	StormPrimary   Lateness `json:"storm_primary"`
	StormSecondary Lateness `json:"storm_secondary"`
	// LagP99Ms and LagMaxMs are the secondary's replication lag during the
	// storm: the primary's last write date minus the secondary's.
	LagP99Ms float64 `json:"lag_p99_ms"`
	LagMaxMs float64 `json:"lag_max_ms"`
	// StormElections is how many elections the set held during the storm
	// (its term's growth): a member starved of CPU long enough misses
	// raft's heartbeats.
	StormElections int64 `json:"storm_elections"`
	// StormWrites is the latency of clients' w:"majority" inserts made
	// back to back by stormWriters clients while the storm is deleted:
	// what a storm's deletions, queued in the replicated log, cost an
	// application's writes.
	StormWrites Summary `json:"storm_writes"`
	// StormLeft is, per member, what remained after the storm when its
	// count had not reached zero: the stored count beside the records
	// validate walks, which tells a count that drifted from documents
	// that stayed.
	StormLeft []StormLeft `json:"storm_left,omitempty"`
	// FailoverMs is, per kill -9 of the primary, the time until a client
	// writing through the seed list had its next write acknowledged.
	FailoverMs    []float64 `json:"failover_ms"`
	FailoverP50Ms float64   `json:"failover_p50_ms"`
	FailoverMaxMs float64   `json:"failover_max_ms"`
}

// replSetRun is a replica set of Mayfly processes started by the bench.
type replSetRun struct {
	m    *modeRun
	name string // the set's name; "" for replSetName
	// configsvr marks a config server replica set in its configuration.
	configsvr bool
	bin       string // the members' mayfly build
	members   []*server
	addrs     []string
	dirs      []string
	// stormProfile, when set, is a file for a CPU profile of this process
	// over the storm's window only, without the load before it (the
	// in-process profile, TestProfileReplSet).
	stormProfile string
}

const replSetName = "rs0"

// replSetPhase measures a three-member set of kind's build (nameMayfly, or
// nameBaseline for -baseline-bin).
func (m *modeRun) replSetPhase(ctx context.Context, kind string) (*ReplSetResult, error) {
	bin := m.mayflyBin
	if kind == nameBaseline {
		bin = m.cfg.BaselineBin
	}
	rs, err := m.startReplSet(ctx, 3, bin)
	if err != nil {
		return nil, err
	}
	defer rs.stop()
	res := &ReplSetResult{Members: 3}
	sz := m.cfg.Sizes
	job, err := m.job(ctx, Job{Kind: jobDurable, URI: rs.uri(), Majority: true, Clients: sz.Clients,
		Warmup: sz.Warmup / 2, Duration: sz.DurableDuration})
	if err != nil {
		return nil, fmt.Errorf("majority inserts: %w", err)
	}
	res.Majority = job.Durable
	m.logf("replica set of %s: w:majority inserts, %d clients: %.0f/s", kind, sz.Clients, res.Majority.OpsPerSec)
	if err := rs.storm(ctx, res); err != nil {
		return res, fmt.Errorf("replica set storm: %w", err)
	}
	m.logf("replica set storm on %s: %d docs, lateness p99 primary %.0f ms, secondary %.0f ms, lag p99 %.0f ms, %d elections; %d w:majority inserts meanwhile, p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		kind, res.StormDocs, res.StormPrimary.Upper.P99Ms, res.StormSecondary.Upper.P99Ms, res.LagP99Ms, res.StormElections,
		res.StormWrites.Count, res.StormWrites.P50Ms, res.StormWrites.P99Ms, res.StormWrites.MaxMs)
	if err := rs.failovers(ctx, sz.Failovers, res); err != nil {
		return res, fmt.Errorf("failover: %w", err)
	}
	m.logf("failover on %s: %d kills, next acknowledged write after p50 %.0f ms, max %.0f ms", kind, len(res.FailoverMs), res.FailoverP50Ms, res.FailoverMaxMs)
	return res, nil
}

func (m *modeRun) startReplSet(ctx context.Context, n int, bin string) (*replSetRun, error) {
	rs := &replSetRun{m: m, bin: bin}
	for i := 0; i < n; i++ {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		dir, err := mkdir(m.work, fmt.Sprintf("member%d", i))
		if err != nil {
			return nil, err
		}
		rs.addrs, rs.dirs = append(rs.addrs, addr), append(rs.dirs, dir)
		rs.members = append(rs.members, nil)
		if err := rs.start(ctx, i); err != nil {
			rs.stop()
			return nil, err
		}
	}
	if err := rs.initiate(ctx); err != nil {
		rs.stop()
		return nil, err
	}
	return rs, nil
}

func (rs *replSetRun) start(ctx context.Context, i int) error {
	argv := append(mayflyArgv(rs.bin, rs.addrs[i], filepath.Join(rs.dirs[i], "data")), "--replSet", replSetName)
	s, err := startServer(ctx, fmt.Sprintf("member%d", i), pinned(rs.m.serverCPU, argv), rs.addrs[i], filepath.Join(rs.dirs[i], "mayfly.log"))
	rs.members[i] = s
	return err
}

func (rs *replSetRun) stop() {
	for _, s := range rs.members {
		if s != nil {
			_ = s.stop()
		}
	}
}

func (rs *replSetRun) uri() string {
	return fmt.Sprintf("mongodb://%s/?replicaSet=%s", strings.Join(rs.addrs, ","), rs.setName())
}

func (rs *replSetRun) setName() string {
	if rs.name == "" {
		return replSetName
	}
	return rs.name
}

func (rs *replSetRun) initiate(ctx context.Context) error {
	if err := rs.initiateOnly(ctx); err != nil {
		return err
	}
	_, err := rs.primary(ctx, -1, 20*time.Second)
	return err
}

// initiateOnly sends replSetInitiate with every member to the first.
func (rs *replSetRun) initiateOnly(ctx context.Context) error {
	c, err := dialMongo(ctx, rs.addrs[0], 1)
	if err != nil {
		return err
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	members := bson.A{}
	for i, a := range rs.addrs {
		members = append(members, bson.D{{Key: "_id", Value: int32(i)}, {Key: "host", Value: a}})
	}
	cfg := bson.D{{Key: "_id", Value: rs.setName()}, {Key: "members", Value: members}}
	if rs.configsvr {
		cfg = append(cfg, bson.E{Key: "configsvr", Value: true})
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: cfg}}).Err(); err != nil {
		return fmt.Errorf("replSetInitiate: %w", err)
	}
	return nil
}

// primary waits for a writable primary other than member not.
func (rs *replSetRun) primary(ctx context.Context, not int, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for i, a := range rs.addrs {
			if i != not && rs.members[i] != nil && memberWritable(ctx, a) {
				return i, nil
			}
		}
		if err := sleepUntil(ctx, time.Now().Add(20*time.Millisecond)); err != nil {
			return -1, err
		}
	}
	return -1, fmt.Errorf("no primary within %v", timeout)
}

func memberWritable(ctx context.Context, addr string) bool {
	h, err := memberHello(ctx, addr)
	return err == nil && h.IsWritablePrimary
}

type memberHelloReply struct {
	IsWritablePrimary bool `bson:"isWritablePrimary"`
	LastWrite         struct {
		Date time.Time `bson:"lastWriteDate"`
	} `bson:"lastWrite"`
}

func memberHello(ctx context.Context, addr string) (memberHelloReply, error) {
	var h memberHelloReply
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true").SetServerSelectionTimeout(time.Second))
	if err != nil {
		return h, err
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&h)
	return h, err
}

// storm loads documents that expire over the storm window through the
// set, then samples the stored count of the primary and of a secondary,
// and both members' last write dates, until all are deleted.
func (rs *replSetRun) storm(ctx context.Context, res *ReplSetResult) error {
	sz := rs.m.cfg.Sizes
	p, err := rs.primary(ctx, -1, 10*time.Second)
	if err != nil {
		return err
	}
	sec := (p + 1) % len(rs.addrs)
	set, err := mongo.Connect(options.Client().ApplyURI(rs.uri()).SetMaxPoolSize(loadParallel))
	if err != nil {
		return err
	}
	defer set.Disconnect(context.WithoutCancel(ctx))
	db := set.Database(benchDB)
	s := newSchedule(sz.StormDocs, sz.StormWindow)
	if _, err := loadStorm(ctx, db.Collection(stormColl), s); err != nil {
		return err
	}
	start := s.startAtOrAfter(time.Now().Add(time.Second))
	if err := armStorm(ctx, db, stormColl, s); err != nil {
		return err
	}
	res.StormDocs = s.n
	term, err := setTerm(ctx, set)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(rs.stormProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	prim, err := dialMongo(ctx, rs.addrs[p], 2)
	if err != nil {
		return err
	}
	defer prim.Disconnect(context.WithoutCancel(ctx))
	secc, err := dialMongo(ctx, rs.addrs[sec], 2)
	if err != nil {
		return err
	}
	defer secc.Disconnect(context.WithoutCancel(ctx))
	until := s.expiry(s.n - 1).Add(sz.StormMaxDrain)
	// Sampling begins before the first expiry, so that the first sample
	// counts none deleted: one taken at the first expiry would already
	// miss what the server deleted at that instant, and count it never.
	from := start.Add(-10 * sz.StormPoll)
	lags := &Histogram{}
	secSamples := make(chan []ttlSample, 1)
	go func() {
		out, _ := pollStored(ctx, secc.Database(benchDB).Collection(stormColl, options.Collection().SetReadPreference(readpref.SecondaryPreferred())),
			sz.StormPoll, from, until, int64(s.n), prim, secc, lags)
		secSamples <- out
	}()
	writesCtx, stopWrites := context.WithCancel(ctx)
	writes := make(chan *Histogram, 1)
	go func() { writes <- stormWrites(writesCtx, db, start) }()
	// The primary is sampled as the secondary is, by what its storage
	// still holds: its TTL counter would stop if an election moved the
	// deleting to another member, and undercount the storm.
	primSamples, err := pollStored(ctx, prim.Database(benchDB).Collection(stormColl), sz.StormPoll, from, until, int64(s.n), nil, nil, nil)
	stopWrites()
	res.StormWrites = (<-writes).Summarize()
	if err != nil {
		return err
	}
	secs := <-secSamples
	stopProfile()
	if now, err := setTerm(ctx, set); err == nil {
		res.StormElections = now - term
	}
	res.StormLeft = append(res.StormLeft, leftAfterStorm(ctx, "primary", prim, primSamples, int64(s.n))...)
	res.StormLeft = append(res.StormLeft, leftAfterStorm(ctx, "secondary", secc, secs, int64(s.n))...)
	res.StormPrimary = deletionLateness(primSamples, s)
	res.StormSecondary = deletionLateness(secs, s)
	res.LagP99Ms, res.LagMaxMs = ms(lags.Quantile(0.99)), ms(lags.Max())
	return nil
}

// stormWriters is how many clients insert during the storm, each its
// next document as soon as the last is acknowledged.
const stormWriters = 4

// stormWrites inserts with w:"majority" from stormWriters clients, from
// start until ctx ends, and returns their latencies.
func stormWrites(ctx context.Context, db *mongo.Database, start time.Time) *Histogram {
	all := &Histogram{}
	if sleepUntil(ctx, start) != nil {
		return all
	}
	coll := db.Collection("stormWrites", options.Collection().SetWriteConcern(writeconcern.Majority()))
	hists := make([]*Histogram, stormWriters)
	var wg sync.WaitGroup
	for i := range hists {
		h := &Histogram{}
		hists[i] = h
		wg.Go(func() {
			for ctx.Err() == nil {
				t := time.Now()
				if _, err := coll.InsertOne(ctx, bson.D{{Key: "writer", Value: i}, {Key: "at", Value: t}}); err != nil {
					// The storm's end cancels the last one; anything else
					// is retried after a pause.
					_ = sleepUntil(ctx, time.Now().Add(10*time.Millisecond))
					continue
				}
				h.Add(time.Since(t))
			}
		})
	}
	wg.Wait()
	for _, h := range hists {
		all.Merge(h)
	}
	return all
}

// pollStored samples how many of want documents are gone from a member's
// storage (its stored count against the first sample), and, unless lags
// is nil, the member's replication lag behind the primary at each sample.
func pollStored(ctx context.Context, coll *mongo.Collection, every time.Duration, from, until time.Time, want int64, primary, secondary *mongo.Client, lags *Histogram) ([]ttlSample, error) {
	if err := sleepUntil(ctx, from); err != nil {
		return nil, err
	}
	var out []ttlSample
	var first int64 = -1
	for {
		smp := ttlSample{sent: time.Now()}
		n, err := storedCount(ctx, coll)
		smp.recv = time.Now()
		if err != nil {
			return out, err
		}
		if first < 0 {
			first = n
		}
		smp.deleted = first - n + (want - first)
		out = append(out, smp)
		if lags != nil { // nil for the primary, which lags no one
			if lag, err := replicationLag(ctx, primary, secondary); err == nil {
				lags.Add(lag)
			}
		}
		if n == 0 || smp.recv.After(until) {
			return out, nil
		}
		if err := sleepUntil(ctx, smp.sent.Add(every)); err != nil {
			return out, err
		}
	}
}

// setTerm is the set's raft term as its primary reports it: a term that
// grows during a storm says the members held an election meanwhile.
func setTerm(ctx context.Context, set *mongo.Client) (int64, error) {
	var st struct {
		Term int64 `bson:"term"`
	}
	err := set.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Decode(&st)
	return st.Term, err
}

// replicationLag is the primary's last write date minus the secondary's.
func replicationLag(ctx context.Context, primary, secondary *mongo.Client) (time.Duration, error) {
	var ph, sh memberHelloReply
	if err := primary.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&ph); err != nil {
		return 0, err
	}
	if err := secondary.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&sh); err != nil {
		return 0, err
	}
	return max(ph.LastWrite.Date.Sub(sh.LastWrite.Date), 0), nil
}

func storedCount(ctx context.Context, coll *mongo.Collection) (int64, error) {
	cur, err := coll.Aggregate(ctx, bson.A{bson.D{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}}}}})
	if err != nil {
		return 0, err
	}
	var out []struct {
		Count int64 `bson:"count"`
	}
	if err := cur.All(ctx, &out); err != nil || len(out) != 1 {
		return 0, errors.Join(err, fmt.Errorf("$collStats: %d results", len(out)))
	}
	return out[0].Count, nil
}

// failovers kills the primary with SIGKILL kills times while a client
// writes through the seed list, and records how long each time it took
// until its next write was acknowledged. Each killed member is restarted.
func (rs *replSetRun) failovers(ctx context.Context, kills int, res *ReplSetResult) error {
	c, err := mongo.Connect(options.Client().ApplyURI(rs.uri()).SetWriteConcern(writeconcern.Majority()))
	if err != nil {
		return err
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	coll := c.Database(benchDB).Collection("failover")
	// lastAck is when the last write sent after the last kill was
	// acknowledged: a write in flight at the kill may be acknowledged by
	// the old primary a moment later, which says nothing of the failover.
	var lastAck, lastKill atomic.Int64
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for i := 0; wctx.Err() == nil; i++ {
			opCtx, cancel := context.WithTimeout(wctx, 20*time.Second)
			sent := time.Now().UnixNano()
			if _, err := coll.InsertOne(opCtx, bson.D{{Key: "i", Value: i}}); err == nil && sent > lastKill.Load() {
				lastAck.Store(time.Now().UnixNano())
			}
			cancel()
		}
	}()
	for k := 0; k < kills; k++ {
		if err := sleepUntil(ctx, time.Now().Add(time.Second)); err != nil {
			return err
		}
		p, err := rs.primary(ctx, -1, 20*time.Second)
		if err != nil {
			return err
		}
		killed := time.Now()
		lastKill.Store(killed.UnixNano())
		_ = rs.members[p].cmd.Process.Kill()
		<-rs.members[p].done
		rs.members[p] = nil
		d, err := nextAck(ctx, &lastAck, killed, 20*time.Second)
		if err != nil {
			return err
		}
		res.FailoverMs = append(res.FailoverMs, ms(d))
		if err := rs.start(ctx, p); err != nil {
			return err
		}
	}
	sorted := slices.Sorted(slices.Values(res.FailoverMs))
	res.FailoverP50Ms, res.FailoverMaxMs = sorted[len(sorted)/2], sorted[len(sorted)-1]
	return nil
}

func nextAck(ctx context.Context, lastAck *atomic.Int64, after time.Time, timeout time.Duration) (time.Duration, error) {
	deadline := after.Add(timeout)
	for time.Now().Before(deadline) {
		if at := lastAck.Load(); at > after.UnixNano() {
			return time.Duration(at - after.UnixNano()), nil
		}
		if err := sleepUntil(ctx, time.Now().Add(5*time.Millisecond)); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("no write acknowledged within %v of a kill", timeout)
}

// startCPUProfile starts a CPU profile of this process into path (none
// when path is empty); stop ends it and may be called more than once.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("storm profile: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		})
	}, nil
}

// StormLeft is one member's remainder after a storm that did not end.
type StormLeft struct {
	Member  string `json:"member"`
	Stored  int64  `json:"stored"`
	Records int64  `json:"records"`
}

// leftAfterStorm asks the member's validate for its records when its last
// sample still counted documents; nil when the storm ended there.
func leftAfterStorm(ctx context.Context, member string, c *mongo.Client, samples []ttlSample, want int64) []StormLeft {
	if len(samples) == 0 || samples[len(samples)-1].deleted >= want {
		return nil
	}
	coll := c.Database(benchDB).Collection(stormColl, options.Collection().SetReadPreference(readpref.SecondaryPreferred()))
	left := StormLeft{Member: member, Stored: -1, Records: -1}
	if n, err := storedCount(ctx, coll); err == nil {
		left.Stored = n
	}
	var v struct {
		NRecords int64 `bson:"nrecords"`
	}
	cmd := bson.D{{Key: "validate", Value: stormColl}}
	if err := c.Database(benchDB).RunCommand(ctx, cmd, options.RunCmd().SetReadPreference(readpref.SecondaryPreferred())).Decode(&v); err == nil {
		left.Records = v.NRecords
	}
	return []StormLeft{left}
}
