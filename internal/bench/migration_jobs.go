package bench

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/cpucap"
)

// sessionChunkBounds are the bounds of 2·perShard chunks of equal width
// over the hashed token, as the shard key stores them: MinKey, the split
// points, MaxKey. The one in the middle is 0, where shardCollection
// parts two shards' first chunks; chunk j is [bounds[j], bounds[j+1]),
// on shard 0 for j < perShard.
func sessionChunkBounds(perShard int) []bson.D {
	step := uint64(1<<63) / uint64(perShard)
	out := []bson.D{{{Key: shardKeyField, Value: bson.MinKey{}}}}
	for j := 1; j < 2*perShard; j++ {
		var h int64
		if j < perShard {
			h = -int64(uint64(perShard-j) * step)
		} else {
			h = int64(uint64(j-perShard) * step)
		}
		out = append(out, bson.D{{Key: shardKeyField, Value: h}})
	}
	return append(out, bson.D{{Key: shardKeyField, Value: bson.MaxKey{}}})
}

// shardCollection shards a collection of the bench database on the
// hashed token.
func shardCollection(ctx context.Context, router *mongo.Client, coll string) error {
	cmd := bson.D{{Key: "shardCollection", Value: benchDB + "." + coll},
		{Key: "key", Value: bson.D{{Key: shardKeyField, Value: "hashed"}}}}
	if err := router.Database("admin").RunCommand(ctx, cmd).Err(); err != nil {
		return fmt.Errorf("shardCollection %s: %w", coll, err)
	}
	return nil
}

// MoveResult is one moveChunk of a populated chunk on an idle cluster.
type MoveResult struct {
	// Docs is what the recipient stored after the move, of Loaded.
	Docs   int64      `json:"docs"`
	Loaded int        `json:"loaded"`
	Load   LoadResult `json:"load"`
	// Seconds is the command's time at the client, ServerMillis what the
	// router answered.
	Seconds      float64 `json:"seconds"`
	ServerMillis int64   `json:"server_millis"`
	DocsPerSec   float64 `json:"docs_per_sec"`
	// CPU seconds per 1,000 documents moved, of each process over the
	// command's time.
	DonorCPUPerK     float64 `json:"donor_cpu_per_1000"`
	RecipientCPUPerK float64 `json:"recipient_cpu_per_1000"`
	RouterCPUPerK    float64 `json:"router_cpu_per_1000"`
}

// movedDoc is a session with room for what an application keeps in one:
// about 300 bytes of BSON, its padding hex of pseudo-random bytes so
// that compression does not make it small again.
type movedDoc struct {
	Token      string    `bson:"token"`
	UserID     int64     `bson:"userID"`
	AccessTime time.Time `bson:"accessTime"`
	Data       string    `bson:"data"`
}

// movedPadding is session i's 192 hex digits of padding.
func movedPadding(i uint64) string {
	var b [96]byte
	for k := 0; k < len(b); k += 8 {
		x := mix64(i*16 + uint64(k))
		for n := range 8 {
			b[k+n] = byte(x >> (8 * n))
		}
	}
	return hex.EncodeToString(b[:])
}

// runMoveJob loads j.Migration.Docs sessions into an unsharded
// collection (on shard 0, the database's primary), shards it (one chunk,
// where the data is), and moves that chunk to shard 1, reading the CPU
// time of donor, recipient and router around the command.
func runMoveJob(ctx context.Context, j Job) (*MoveResult, error) {
	sp := j.Migration
	if len(sp.Shards) < 2 {
		return nil, errors.New("a move needs two shards")
	}
	donor, recipient := sp.Shards[0], sp.Shards[1]
	router, err := dialMongo(ctx, j.Addr, loadParallel)
	if err != nil {
		return nil, err
	}
	defer router.Disconnect(context.WithoutCancel(ctx))
	res := &MoveResult{Loaded: sp.Docs}
	if res.Load, err = loadMoved(ctx, router, sp.Docs); err != nil {
		return nil, err
	}
	for _, pid := range []int{donor.PID, recipient.PID} {
		if _, err := waitIdle(ctx, pid, settleLimit); err != nil {
			return nil, err
		}
	}
	cpu, err := res.timeMove(ctx, router, recipient.Name, []int{donor.PID, recipient.PID, sp.RouterPID})
	if err != nil {
		return nil, err
	}
	if res.Docs, err = storedOn(ctx, recipient.Addr, movedColl); err != nil {
		return nil, err
	}
	perK := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(max(res.Docs, 1)) }
	res.DocsPerSec = float64(res.Docs) / res.Seconds
	res.DonorCPUPerK, res.RecipientCPUPerK, res.RouterCPUPerK = perK(cpu[0]), perK(cpu[1]), perK(cpu[2])
	if res.Docs != int64(sp.Docs) {
		return res, fmt.Errorf("the recipient stores %d documents of the %d moved", res.Docs, sp.Docs)
	}
	return res, nil
}

// timeMove moves the moved collection's chunk to shard `to`, noting the
// command's time and the router's millis, and returns the CPU each of
// pids used meanwhile.
func (res *MoveResult) timeMove(ctx context.Context, router *mongo.Client, to string, pids []int) ([]time.Duration, error) {
	before, err := cpuTimes(pids)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var reply struct {
		Millis int64 `bson:"millis"`
	}
	cmd := bson.D{{Key: "moveChunk", Value: benchDB + "." + movedColl},
		{Key: "find", Value: bson.D{{Key: shardKeyField, Value: token(0)}}}, {Key: "to", Value: to}}
	if err := router.Database("admin").RunCommand(ctx, cmd).Decode(&reply); err != nil {
		return nil, fmt.Errorf("moveChunk: %w", err)
	}
	res.Seconds, res.ServerMillis = time.Since(start).Seconds(), reply.Millis
	after, err := cpuTimes(pids)
	if err != nil {
		return nil, err
	}
	for i := range after {
		after[i] -= before[i]
	}
	return after, nil
}

// loadMoved creates the moved collection with the sessions' indexes and
// the shard key's, inserts n sessions, and shards it.
func loadMoved(ctx context.Context, router *mongo.Client, n int) (LoadResult, error) {
	coll := router.Database(benchDB).Collection(movedColl)
	if err := createSessionIndexes(ctx, coll); err != nil {
		return LoadResult{}, err
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: shardKeyField, Value: "hashed"}}}); err != nil {
		return LoadResult{}, fmt.Errorf("shard key index: %w", err)
	}
	now := time.Now()
	load, err := insertAll(ctx, coll, n, "moved sessions", func(i int) movedDoc {
		return movedDoc{Token: token(uint64(i)), UserID: userID(uint64(i)), AccessTime: now, Data: movedPadding(uint64(i))}
	})
	if err != nil {
		return load, err
	}
	return load, shardCollection(ctx, router, movedColl)
}

// cpuTimes reads each process's CPU time.
func cpuTimes(pids []int) ([]time.Duration, error) {
	out := make([]time.Duration, len(pids))
	for i, pid := range pids {
		var err error
		if out[i], err = cpuTime(pid); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// storedOn is how many documents a shard stores in a bench collection,
// expired and orphaned ones included.
func storedOn(ctx context.Context, addr, coll string) (int64, error) {
	c, err := dialMongo(ctx, addr, 1)
	if err != nil {
		return 0, err
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	n, err := storedCount(ctx, c.Database(benchDB).Collection(coll))
	if err != nil {
		return 0, fmt.Errorf("stored on %s: %w", addr, err)
	}
	return n, nil
}

// MovingResult is the session workload through the router without and
// with chunks moving, and the lateness of documents expiring meanwhile.
type MovingResult struct {
	Chunks  int          `json:"chunks"` // of the sessions collection
	Without WindowResult `json:"without"`
	With    WindowResult `json:"with"`
	Mix     MixResult    `json:"mix"`
	Moves   MoveStats    `json:"moves"`
	// Expiring documents expire evenly over both windows, in a collection
	// whose chunks stay (PerShard on each shard); the lateness of those
	// expiring in the window without moves is the control.
	Expiring        int            `json:"expiring"`
	PerShard        []int          `json:"per_shard"`
	LatenessWithout WindowLateness `json:"lateness_without"`
	LatenessWith    WindowLateness `json:"lateness_with"`
	AllDeleted      bool           `json:"all_deleted"`
	// CPU is each shard's and the router's, in both windows.
	CPU []ProcCPU `json:"cpu"`
}

// MoveStats are the moves of a window: how many committed, how many
// failed, and how long the committed ones took.
type MoveStats struct {
	Moves    int     `json:"moves"`
	Failed   int     `json:"failed"`
	FirstErr string  `json:"first_error,omitempty"`
	Duration Summary `json:"duration"`
	// Critical is how long each committed move held the donor's critical
	// section, its moveChunk.from steps 5 and 6 in config.changelog.
	Critical Summary `json:"critical"`
}

// runMovingJob loads documents that expire evenly over both windows,
// then runs the session workload through the router for a window with no
// migration and one in which chunks move back and forth, one at a time,
// while each shard's stored count of the expiring documents is sampled.
func runMovingJob(ctx context.Context, j Job) (*MovingResult, error) {
	sp := j.Migration
	router, err := dialMongo(ctx, j.Addr, loadParallel)
	if err != nil {
		return nil, err
	}
	defer router.Disconnect(context.WithoutCancel(ctx))
	db := router.Database(benchDB)
	s, placed, err := loadExpiring(ctx, db, sp)
	if err != nil {
		return nil, err
	}
	st, err := newMongoStore(ctx, j.Addr, j.Clients)
	if err != nil {
		return nil, err
	}
	defer st.close(context.WithoutCancel(ctx))
	first := s.startAtOrAfter(time.Now().Add(j.Warmup + expiryLead))
	without, with := span{first, first.Add(sp.Window)}, span{first.Add(sp.Window), first.Add(2 * sp.Window)}
	if err := armStorm(ctx, db, expiringColl, s); err != nil {
		return nil, err
	}
	samples := pollShards(ctx, sp, placed, first.Add(-10*sp.PollEvery), with.to.Add(sp.MaxDrain))
	names, pids := processes(sp)
	cpu := windowsCPU(ctx, names, pids, without, with)
	moves := make(chan MoveStats, 1)
	go func() { moves <- newChunkMover(router.Database("admin"), sp).run(ctx, with) }()
	rec, mix, _ := runMix(ctx, st, mixSpec{clients: j.Clients, preloaded: j.Count, runID: j.RunID}, []span{without, with}, with.to)
	res := &MovingResult{Chunks: 2 * sp.ChunksPerShard, Expiring: s.n, Moves: <-moves,
		Without: rec.result(0), With: rec.result(1), Mix: mix, CPU: <-cpu}
	smp, err := samples()
	if err != nil {
		return nil, err
	}
	for _, ids := range placed {
		res.PerShard = append(res.PerShard, len(ids))
	}
	late := shardsLateness(smp, placed, s, with.from)
	res.LatenessWithout, res.LatenessWith = late[0], late[1]
	res.AllDeleted = late[0].Lateness.Deleted+late[1].Lateness.Deleted == int64(s.n)
	return res, checkMix(rec.hists[0].Count(), mix)
}

// expiryLead keeps the start of the workload and the arming of the TTL
// index out of the control window: in two runs without it, that window's
// lateness p99 was twice the window with moves; with it, alike.
const expiryLead = 2 * time.Second

// loadExpiring loads sp.Expiring documents spread over two windows with
// a parked TTL index through the router, waits for the shards to go
// idle, and reads which documents each holds.
func loadExpiring(ctx context.Context, db *mongo.Database, sp *MigrationSpec) (schedule, [][]int, error) {
	s := newSchedule(sp.Expiring, 2*sp.Window)
	if _, err := loadStorm(ctx, db.Collection(expiringColl), s); err != nil {
		return s, nil, err
	}
	for _, sh := range sp.Shards {
		if _, err := waitIdle(ctx, sh.PID, settleLimit); err != nil {
			return s, nil, err
		}
	}
	placed, err := expiringPlacement(ctx, sp.Shards, s.n)
	return s, placed, err
}

// pollShards samples each shard's stored count of its expiring
// documents from `from` until `until` or all are gone; the returned
// func waits for the samples.
func pollShards(ctx context.Context, sp *MigrationSpec, placed [][]int, from, until time.Time) func() ([][]ttlSample, error) {
	var wg sync.WaitGroup
	samples := make([][]ttlSample, len(sp.Shards))
	errs := make([]error, len(sp.Shards))
	for i, sh := range sp.Shards {
		wg.Go(func() {
			samples[i], errs[i] = pollShardStored(ctx, sh.Addr, sp.PollEvery, from, until, len(placed[i]))
		})
	}
	return func() ([][]ttlSample, error) {
		wg.Wait()
		return samples, errors.Join(errs...)
	}
}

// processes are the names and pids of the shards and the router.
func processes(sp *MigrationSpec) (names []string, pids []int) {
	for _, sh := range sp.Shards {
		names, pids = append(names, sh.Name), append(pids, sh.PID)
	}
	return append(names, routerName), append(pids, sp.RouterPID)
}

// expiringPlacement asks each shard which expiring documents it holds
// (their _id is their place in the schedule) and returns each shard's, in
// expiry order; every document must be on exactly one.
func expiringPlacement(ctx context.Context, shards []ShardRef, n int) ([][]int, error) {
	out := make([][]int, len(shards))
	total := 0
	for i, sh := range shards {
		ids, err := idsOn(ctx, sh.Addr, expiringColl)
		if err != nil {
			return nil, err
		}
		slices.Sort(ids)
		out[i], total = ids, total+len(ids)
	}
	if total != n {
		return nil, fmt.Errorf("the shards hold %d expiring documents of %d", total, n)
	}
	return out, nil
}

// idsOn reads the int _ids of a bench collection straight from a shard.
func idsOn(ctx context.Context, addr, coll string) ([]int, error) {
	c, err := dialMongo(ctx, addr, 1)
	if err != nil {
		return nil, err
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	cur, err := c.Database(benchDB).Collection(coll).Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("ids on %s: %w", addr, err)
	}
	var docs []struct {
		ID int `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("ids on %s: %w", addr, err)
	}
	ids := make([]int, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids, nil
}

// pollShardStored samples a shard's stored count of the expiring
// documents (pollStored) from its own connection.
func pollShardStored(ctx context.Context, addr string, every time.Duration, from, until time.Time, want int) ([]ttlSample, error) {
	c, err := dialMongo(ctx, addr, 1)
	if err != nil {
		return nil, err
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	return pollStored(ctx, c.Database(benchDB).Collection(expiringColl), every, from, until, int64(want), nil, nil, nil)
}

// WindowLateness is the lateness of the documents expiring in one
// window: over all shards in one distribution, and each shard's p99
// (upper bound).
type WindowLateness struct {
	Expiring   int       `json:"expiring"`
	Lateness   Lateness  `json:"lateness"`
	ShardP99Ms []float64 `json:"shard_p99_ms"`
}

// shardsLateness attributes each shard's deletions in expiry order to the
// documents it holds (placed[i], indexes into s) and gives the lateness
// of those expiring before split and of those expiring from it on.
func shardsLateness(samples [][]ttlSample, placed [][]int, s schedule, split time.Time) [2]WindowLateness {
	var all [2]latenessHists
	var out [2]WindowLateness
	for i := range samples {
		ids := placed[i]
		expiry := func(k int) time.Time { return s.expiry(ids[k]) }
		var own [2]latenessHists
		var gaps Histogram
		attributeDeletions(samples[i], len(ids), expiry, &gaps, func(k int, upper, lower time.Duration) {
			w := windowOf(expiry(k), split)
			own[w].up.Add(upper)
			own[w].lo.Add(lower)
			out[w].Lateness.count(expiry(k).Add(upper))
		})
		for w := range own {
			own[w].gaps.Merge(&gaps)
			out[w].ShardP99Ms = append(out[w].ShardP99Ms, ms(own[w].up.Quantile(0.99)))
			all[w].merge(&own[w])
		}
		for _, id := range ids {
			out[windowOf(s.expiry(id), split)].Expiring++
		}
	}
	for w := range out {
		out[w].Lateness = all[w].summarize(out[w].Lateness)
	}
	return out
}

// windowOf is 0 for a time before split, 1 from it on.
func windowOf(t, split time.Time) int {
	if t.Before(split) {
		return 0
	}
	return 1
}

// ProcCPU is a process's CPU, in cores, over the window without moves
// and the window with them.
type ProcCPU struct {
	Name    string  `json:"name"`
	Without float64 `json:"without_cores"`
	With    float64 `json:"with_cores"`
}

// windowsCPU reads each process's CPU time at the start of without, at
// the start of with (its end) and at the end of with, and sends the
// cores each used in both.
func windowsCPU(ctx context.Context, names []string, pids []int, without, with span) <-chan []ProcCPU {
	out := make(chan []ProcCPU, 1)
	go func() {
		var reads [3][]time.Duration
		for i, at := range []time.Time{without.from, with.from, with.to} {
			var err error
			if sleepUntil(ctx, at) != nil {
				out <- nil
				return
			}
			if reads[i], err = cpuTimes(pids); err != nil {
				out <- nil
				return
			}
		}
		var cpu []ProcCPU
		for k, name := range names {
			cpu = append(cpu, ProcCPU{Name: name, Without: (reads[1][k] - reads[0][k]).Seconds() / without.seconds(),
				With: (reads[2][k] - reads[1][k]).Seconds() / with.seconds()})
		}
		out <- cpu
	}()
	return out
}

// chunkMover moves the sessions collection's chunks between two shards
// one at a time, as a balancer would, alternating the direction so that
// each shard keeps about its half; each move takes the chunk that has
// been on its shard longest, so that its range deletion there is long
// done when it comes back.
type chunkMover struct {
	admin  *mongo.Database
	ns     string
	names  [2]string
	bounds []bson.D
	queues [2][]int // chunk numbers on each shard, longest there first
}

func newChunkMover(admin *mongo.Database, sp *MigrationSpec) *chunkMover {
	mv := &chunkMover{admin: admin, ns: benchDB + "." + sessionsColl, bounds: sessionChunkBounds(sp.ChunksPerShard),
		names: [2]string{sp.Shards[0].Name, sp.Shards[1].Name}}
	for j := range 2 * sp.ChunksPerShard {
		side := j / sp.ChunksPerShard
		mv.queues[side] = append(mv.queues[side], j)
	}
	return mv
}

// failedMovePause keeps a refused move from turning into a busy loop.
const failedMovePause = 100 * time.Millisecond

// run moves chunks back to back from win.from; a move is started only
// before win.to, and the last one may end after it.
func (mv *chunkMover) run(ctx context.Context, win span) MoveStats {
	var st MoveStats
	var took Histogram
	if sleepUntil(ctx, win.from) != nil {
		return st
	}
	for from := 0; ctx.Err() == nil && time.Now().Before(win.to); from = 1 - from {
		start := time.Now()
		if err := mv.move(ctx, from); err != nil {
			st.Failed++
			if st.FirstErr == "" {
				st.FirstErr = err.Error()
			}
			_ = sleepUntil(ctx, time.Now().Add(failedMovePause))
			continue
		}
		took.Add(time.Since(start))
		st.Moves++
	}
	st.Duration = took.Summarize()
	st.Critical = mv.criticalSections(ctx, win.from)
	return st
}

// criticalSections summarizes steps 5 and 6 of the moves that committed
// since from, as config.changelog reports them.
func (mv *chunkMover) criticalSections(ctx context.Context, from time.Time) Summary {
	var h Histogram
	filter := bson.D{{Key: "what", Value: "moveChunk.from"}, {Key: "ns", Value: mv.ns},
		{Key: "details.note", Value: "success"}, {Key: "time", Value: bson.D{{Key: "$gte", Value: from}}}}
	cur, err := mv.admin.Client().Database("config").Collection("changelog").Find(ctx, filter)
	if err != nil {
		return h.Summarize()
	}
	var entries []struct {
		Details bson.Raw `bson:"details"`
	}
	if cur.All(ctx, &entries) != nil {
		return h.Summarize()
	}
	for _, e := range entries {
		var ms int64
		for _, step := range []string{"step 5 of 6", "step 6 of 6"} {
			if v, err := e.Details.LookupErr(step); err == nil {
				n, _ := v.AsInt64OK()
				ms += n
			}
		}
		h.Add(time.Duration(ms) * time.Millisecond)
	}
	return h.Summarize()
}

// move moves the chunk longest on shard `from` to the other shard.
func (mv *chunkMover) move(ctx context.Context, from int) error {
	to := 1 - from
	if len(mv.queues[from]) == 0 {
		return fmt.Errorf("shard %s has no chunk to give", mv.names[from])
	}
	j := mv.queues[from][0]
	cmd := bson.D{{Key: "moveChunk", Value: mv.ns},
		{Key: "bounds", Value: bson.A{mv.bounds[j], mv.bounds[j+1]}}, {Key: "to", Value: mv.names[to]}}
	if err := mv.admin.RunCommand(ctx, cmd).Err(); err != nil {
		return fmt.Errorf("moveChunk %d to %s: %w", j, mv.names[to], err)
	}
	mv.queues[from] = mv.queues[from][1:]
	mv.queues[to] = append(mv.queues[to], j)
	return nil
}

// AddShardResult is a third capped shard added under the session
// workload: how long until it served a third of the operations.
type AddShardResult struct {
	CoresPerShard float64 `json:"cores_per_shard"`
	Chunks        int     `json:"chunks"`
	// Want is the share of every shard's operations counted as "a
	// third", held over Hold one-second intervals.
	Want float64 `json:"want"`
	Hold int     `json:"hold"`
	// ReachedSeconds is from addShard's reply to the end of the first of
	// those intervals; WaitedSeconds how long the job watched.
	Reached        bool    `json:"reached"`
	ReachedSeconds float64 `json:"reached_seconds"`
	WaitedSeconds  float64 `json:"waited_seconds"`
	// OpsBefore is every shard's operations per second over the window
	// before addShard, OpsAfter over the held intervals.
	OpsBefore   float64          `json:"ops_before"`
	OpsAfter    float64          `json:"ops_after"`
	Intervals   []ShareInterval  `json:"intervals"`
	ChunksAfter map[string]int64 `json:"chunks_after"`
	Mix         MixResult        `json:"mix"`
	// Throttling is each shard's cap over the job (the new shard's from
	// its start).
	Throttling []cpucap.Throttling `json:"throttling"`
}

// ShareInterval is one sampling interval: its end in seconds from
// addShard, every shard's operations per second, the new shard's share.
type ShareInterval struct {
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	NewShare  float64 `json:"new_share"`
}

const (
	// thirdShare counts a share within a tenth of a third as a third:
	// per-second counts of a few thousand operations vary by about 3 %,
	// and the share the balancer leaves is 4/12 of the hash space.
	thirdShare = 0.3
	// shareHold is how many consecutive intervals the share must hold.
	shareHold = 3
	// shareEvery is the opcounters' sampling period.
	shareEvery = time.Second
)

// runAddShardJob runs the session workload through the router to the
// first shards of j.Migration.Shards, adds the last one after j.Warmup +
// j.Duration − MaxWait (the window before it), and samples every
// shard's opcounters each second until the new shard has served a third
// of the operations for shareHold intervals, or MaxWait passed.
func runAddShardJob(ctx context.Context, j Job) (*AddShardResult, error) {
	sp := j.Migration
	router, err := dialMongo(ctx, j.Addr, 2)
	if err != nil {
		return nil, err
	}
	defer router.Disconnect(context.WithoutCancel(ctx))
	counters, err := dialShards(ctx, sp.Shards)
	if err != nil {
		return nil, err
	}
	defer counters.close(context.WithoutCancel(ctx))
	st, err := newMongoStore(ctx, j.Addr, j.Clients)
	if err != nil {
		return nil, err
	}
	defer st.close(context.WithoutCancel(ctx))
	before := j.Duration - sp.MaxWait
	start := time.Now()
	addAt := start.Add(j.Warmup + before)
	stop := make(chan struct{})
	mixDone := make(chan MixResult, 1)
	go func() {
		spec := mixSpec{clients: j.Clients, preloaded: j.Count, runID: j.RunID, stop: stop}
		_, mix, _ := runMix(ctx, st, spec, nil, addAt.Add(sp.MaxWait))
		mixDone <- mix
	}()
	w := shareWatch{router: router, counters: counters, newShard: sp.Shards[len(sp.Shards)-1]}
	res, err := w.watch(ctx, addAt.Add(-before), addAt, sp.MaxWait)
	close(stop)
	mix := <-mixDone
	if err != nil {
		return nil, err
	}
	res.Chunks, res.Mix = 2*sp.ChunksPerShard, mix
	if res.ChunksAfter, err = chunksPerShard(ctx, router, benchDB+"."+sessionsColl); err != nil {
		return nil, err
	}
	return res, nil
}

// shardClients are direct connections to each shard's primary.
type shardClients []*mongo.Client

func dialShards(ctx context.Context, shards []ShardRef) (shardClients, error) {
	var out shardClients
	for _, sh := range shards {
		c, err := dialMongo(ctx, sh.Addr, 1)
		if err != nil {
			out.close(ctx)
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (cs shardClients) close(ctx context.Context) {
	for _, c := range cs {
		_ = c.Disconnect(ctx)
	}
}

// shareWatch adds a shard and watches its share of the operations.
type shareWatch struct {
	router   *mongo.Client
	counters shardClients
	newShard ShardRef
}

// watch samples from `from`, adds the new shard at addAt, and watches
// until its share held or maxWait passed.
func (w shareWatch) watch(ctx context.Context, from, addAt time.Time, maxWait time.Duration) (*AddShardResult, error) {
	if err := sleepUntil(ctx, from); err != nil {
		return nil, err
	}
	newIdx := len(w.counters) - 1
	var samples []opsSample
	var added time.Time
	for next := from; ctx.Err() == nil; next = next.Add(shareEvery) {
		if err := sleepUntil(ctx, next); err != nil {
			return nil, err
		}
		if added.IsZero() && !next.Before(addAt) {
			if err := w.add(ctx); err != nil {
				return nil, err
			}
			added = time.Now()
		}
		smp, err := readOps(ctx, w.counters)
		if err != nil {
			return nil, err
		}
		samples = append(samples, smp)
		if added.IsZero() {
			continue
		}
		if _, ok := shareReached(samples, newIdx, thirdShare, shareHold, added); ok || time.Since(added) > maxWait {
			break
		}
	}
	return shareResult(samples, newIdx, added), ctx.Err()
}

// add runs addShard through the router.
func (w shareWatch) add(ctx context.Context) error {
	cmd := bson.D{{Key: "addShard", Value: w.newShard.Name + "/" + w.newShard.Addr}}
	if err := w.router.Database("admin").RunCommand(ctx, cmd).Err(); err != nil {
		return fmt.Errorf("addShard %s: %w", w.newShard.Name, err)
	}
	return nil
}

// opsSample is every shard's operations (opcounters insert, query,
// update and delete: the workload's, not the commands a migration or
// the sampling itself sends) at one instant.
type opsSample struct {
	at  time.Time
	ops []int64
}

// readOps reads each shard's opcounters, the instant being the middle of
// the round.
func readOps(ctx context.Context, cs shardClients) (opsSample, error) {
	sent := time.Now()
	smp := opsSample{ops: make([]int64, len(cs))}
	for i, c := range cs {
		raw, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
		if err != nil {
			return smp, fmt.Errorf("serverStatus: %w", err)
		}
		for _, k := range []string{"insert", "query", "update", "delete"} {
			v, err := raw.LookupErr("opcounters", k)
			if err != nil {
				return smp, fmt.Errorf("serverStatus: opcounters.%s: %w", k, err)
			}
			n, ok := v.AsInt64OK()
			if !ok {
				return smp, fmt.Errorf("serverStatus: opcounters.%s is %s", k, v.Type)
			}
			smp.ops[i] += n
		}
	}
	smp.at = sent.Add(time.Since(sent) / 2)
	return smp, nil
}

// shareReached finds the first interval between samples, ending after
// since, from which shard's share of all shards' operations stays at or
// above want for hold consecutive intervals; it returns that interval's
// end.
func shareReached(samples []opsSample, shard int, want float64, hold int, since time.Time) (time.Time, bool) {
	run := 0
	for i := 1; i < len(samples); i++ {
		if !samples[i].at.After(since) {
			continue
		}
		if share, ok := intervalShare(samples[i-1], samples[i], shard); ok && share >= want {
			run++
		} else {
			run = 0
		}
		if run == hold {
			return samples[i-hold+1].at, true
		}
	}
	return time.Time{}, false
}

// intervalShare is shard's share of the operations between two samples;
// false when there were none.
func intervalShare(a, b opsSample, shard int) (float64, bool) {
	var all int64
	for i := range b.ops {
		all += b.ops[i] - a.ops[i]
	}
	if all <= 0 {
		return 0, false
	}
	return float64(b.ops[shard]-a.ops[shard]) / float64(all), true
}

// opsRate is every shard's operations per second between two samples.
func opsRate(a, b opsSample) float64 {
	var all int64
	for i := range b.ops {
		all += b.ops[i] - a.ops[i]
	}
	secs := b.at.Sub(a.at).Seconds()
	if secs <= 0 {
		return 0
	}
	return float64(all) / secs
}

// shareResult turns the samples into the result: the time to a third,
// the rates before addShard and over the held intervals, each interval.
func shareResult(samples []opsSample, shard int, added time.Time) *AddShardResult {
	res := &AddShardResult{Want: thirdShare, Hold: shareHold}
	if len(samples) < 2 || added.IsZero() {
		return res
	}
	res.WaitedSeconds = samples[len(samples)-1].at.Sub(added).Seconds()
	firstAfter := 0
	for i := 1; i < len(samples); i++ {
		share, _ := intervalShare(samples[i-1], samples[i], shard)
		res.Intervals = append(res.Intervals, ShareInterval{Seconds: samples[i].at.Sub(added).Seconds(),
			OpsPerSec: opsRate(samples[i-1], samples[i]), NewShare: share})
		if firstAfter == 0 && samples[i].at.After(added) {
			firstAfter = i
		}
	}
	if firstAfter > 1 {
		res.OpsBefore = opsRate(samples[0], samples[firstAfter-1])
	}
	at, ok := shareReached(samples, shard, thirdShare, shareHold, added)
	if ok {
		res.Reached, res.ReachedSeconds = true, at.Sub(added).Seconds()
		res.OpsAfter = opsRate(samples[len(samples)-1-shareHold], samples[len(samples)-1])
	}
	return res
}

// chunksPerShard counts a collection's chunks on each shard from the
// config servers, through the router.
func chunksPerShard(ctx context.Context, router *mongo.Client, ns string) (map[string]int64, error) {
	config := router.Database("config")
	var coll struct {
		UUID bson.Binary `bson:"uuid"`
	}
	if err := config.Collection("collections").FindOne(ctx, bson.D{{Key: "_id", Value: ns}}).Decode(&coll); err != nil {
		return nil, fmt.Errorf("config.collections %s: %w", ns, err)
	}
	cur, err := config.Collection("chunks").Find(ctx, bson.D{{Key: "uuid", Value: coll.UUID}})
	if err != nil {
		return nil, fmt.Errorf("config.chunks: %w", err)
	}
	var chunks []struct {
		Shard string `bson:"shard"`
	}
	if err := cur.All(ctx, &chunks); err != nil {
		return nil, fmt.Errorf("config.chunks: %w", err)
	}
	out := map[string]int64{}
	for _, c := range chunks {
		out[c.Shard]++
	}
	return out, nil
}
