package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mayflydb/mayfly/internal/storage/rescache"
	"github.com/mayflydb/mayfly/internal/wire"
)

// soakDuration is 10 s in CI (two cores shared with other tests);
// MAYFLY_SOAK=2m30s (or 10m) runs the long soak.
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("MAYFLY_SOAK")
	if v == "" {
		return 10 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("MAYFLY_SOAK=%q: %v", v, err)
	}
	return d
}

// TestHostileSoak runs hostile clients (inflating messages, expression
// bombs, expensive aggregates under maxTimeMS, abandoned cursors with big
// plans, connections dropped mid-command) beside normal clients doing
// journaled CRUD against a server process, checks that every normal
// operation succeeds, and accounts for the server's resident memory at the
// end with serverStatus.mayflyMemory, part by part, against its budget.
func TestHostileSoak(t *testing.T) {
	dur := soakDuration(t)
	p := startBinary(t, buildBinary(t), t.TempDir(), freePort(t))
	addr := p.addr
	c := soakClient(t, addr)
	seedOne(t, c.Database("test"))
	time.Sleep(time.Second) // start-up settles
	base := soakMemory(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var wg sync.WaitGroup
	var hostileOps atomic.Int64
	var cursors []int64 // used by soakBigCursor's goroutine only
	hostile := []func(){
		func() { soakInflate(t, addr) },
		func() { soakBomb(c) },
		func() { soakHeavy(c) },
		func() { soakBigCursor(c, &cursors) },
		func() { soakDrop(t, addr) },
	}
	for _, h := range hostile {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				h()
				hostileOps.Add(1)
			}
		}()
	}
	normal := make([]*soakNormal, 4)
	for i := range normal {
		normal[i] = &soakNormal{id: i}
		wg.Add(1)
		go func() { defer wg.Done(); normal[i].run(ctx, c) }()
	}
	samples := soakWatchMemory(ctx, t, c)
	wg.Wait()
	end, settled := soakSettled(t, c, base)
	first, second, peak := soakPeaks(samples)
	ops, errs, lat := 0, 0, []time.Duration{}
	for _, n := range normal {
		ops, errs = ops+n.ops, errs+n.errs
		lat = append(lat, n.lat...)
		if n.firstErr != nil {
			t.Logf("normal client %d: %v", n.id, n.firstErr)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p99, slowest := time.Duration(0), time.Duration(0)
	if len(lat) > 0 {
		p99, slowest = lat[len(lat)*99/100], lat[len(lat)-1]
	}
	t.Logf("soak %v: %d hostile operations; normal clients %d operations, %d errors, p99 %v, slowest %v; server resident baseline %d MiB, peak +%d MiB (first half +%d, second half +%d), end +%d MiB",
		dur, hostileOps.Load(), ops, errs, p99, slowest, base.Resident>>20, (peak.Resident-base.Resident)>>20, (first-base.Resident)>>20, (second-base.Resident)>>20, (end.Resident-base.Resident)>>20)
	t.Logf("at the peak: %s", peak)
	t.Logf("at the end:  %s", end)
	if errs > 0 || ops == 0 {
		t.Errorf("normal clients: %d errors in %d operations", errs, ops)
	}
	// A leak per operation would show as a climb from the first half to
	// the second (long runs only: a short one is all ramp-up).
	if dur >= time.Minute && second-base.Resident > (first-base.Resident)*3/2+100<<20 {
		t.Errorf("resident memory climbs: peak +%d MiB in the first half, +%d MiB in the second", (first-base.Resident)>>20, (second-base.Resident)>>20)
	}
	if settled {
		checkSoakBudget(t, base, end)
	}
	pingFresh(t, addr)
}

func soakClient(t *testing.T, addr string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true").SetTimeout(20 * time.Second))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// soakWatchMemory samples the server's memory account every 500 ms until
// ctx ends. A sample the loaded server does not answer within 5 s is
// skipped: the normal clients' errors are what the soak judges.
func soakWatchMemory(ctx context.Context, t *testing.T, c *mongo.Client) []serverMemory {
	var samples []serverMemory
	missed := 0
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			t.Logf("%d memory samples, %d not answered within 5 s", len(samples), missed)
			return samples
		case <-tick.C:
			if m, err := readServerMemory(c, 5*time.Second); err == nil {
				samples = append(samples, m)
			} else {
				missed++
			}
		}
	}
}

// soakPeaks returns the peaks of the first and second half of samples and
// the sample with the most resident memory.
func soakPeaks(samples []serverMemory) (first, second int64, peak serverMemory) {
	for i, m := range samples {
		if i < len(samples)/2 {
			first = max(first, m.Resident)
		} else {
			second = max(second, m.Resident)
		}
		if m.Resident > peak.Resident {
			peak = m
		}
	}
	return first, second, peak
}

type soakNormal struct {
	id, ops, errs int
	lat           []time.Duration
	firstErr      error
}

func (n *soakNormal) run(ctx context.Context, c *mongo.Client) {
	coll := c.Database("test").Collection("normal", options.Collection().SetWriteConcern(writeconcern.Journaled()))
	for i := 0; ctx.Err() == nil; i++ {
		id := n.id*1_000_000 + i
		start := time.Now()
		err := n.step(coll, id)
		n.lat = append(n.lat, time.Since(start))
		n.ops++
		if err != nil {
			n.errs++
			if n.firstErr == nil {
				n.firstErr = fmt.Errorf("%s operation %d: %w", time.Now().Format(time.TimeOnly), n.ops, err)
			}
		}
	}
}

func (n *soakNormal) step(coll *mongo.Collection, id int) error {
	bg := context.Background()
	if _, err := coll.InsertOne(bg, bson.D{{Key: "_id", Value: id}, {Key: "v", Value: id}}); err != nil {
		return fmt.Errorf("insert %d: %w", id, err)
	}
	if err := coll.FindOne(bg, bson.D{{Key: "_id", Value: id}}).Err(); err != nil {
		return fmt.Errorf("findOne %d: %w", id, err)
	}
	if _, err := coll.UpdateOne(bg, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}}}}); err != nil {
		return fmt.Errorf("update %d: %w", id, err)
	}
	if _, err := coll.DeleteOne(bg, bson.D{{Key: "_id", Value: id - 10}}); err != nil {
		return fmt.Errorf("delete %d: %w", id-10, err)
	}
	return nil
}

func soakInflate(t *testing.T, addr string) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return
	}
	defer nc.Close()
	_, _ = nc.Write(soakBombMsg(t))
	_, _ = readRawReply(nc, 20*time.Second)
	time.Sleep(50 * time.Millisecond)
}

var (
	soakMsgOnce sync.Once
	soakMsg     []byte
)

func soakBombMsg(t *testing.T) []byte {
	soakMsgOnce.Do(func() { soakMsg = inflatingMessage(t, wire.CompressorZstd) })
	return soakMsg
}

func soakBomb(c *mongo.Client) {
	doubling := bson.D{{Key: "$reduce", Value: bson.D{
		{Key: "input", Value: bson.D{{Key: "$range", Value: bson.A{0, 40}}}},
		{Key: "initialValue", Value: "x"},
		{Key: "in", Value: bson.D{{Key: "$concat", Value: bson.A{"$$value", "$$value"}}}},
	}}}
	_ = c.Database("test").RunCommand(context.Background(), bson.D{{Key: "aggregate", Value: "one"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "s", Value: doubling}}}}}}, {Key: "cursor", Value: bson.D{}}}).Err()
}

func soakHeavy(c *mongo.Client) {
	_ = c.Database("test").RunCommand(context.Background(), append(heavyAggregate(), bson.E{Key: "maxTimeMS", Value: 200})).Err()
}

// soakBigCursor opens cursors whose plan is an $in of 100 000 values and
// keeps the 20 newest open, as a client holding many cursors does.
func soakBigCursor(c *mongo.Client, open *[]int64) {
	in := make(bson.A, 100_000)
	for i := range in {
		in[i] = int32(i)
	}
	db := c.Database("test")
	var reply bson.D
	err := db.RunCommand(context.Background(), bson.D{{Key: "find", Value: "one"},
		{Key: "filter", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}}}, {Key: "batchSize", Value: 0}}).Decode(&reply)
	if err == nil && len(reply) > 0 {
		if cur, ok := reply[0].Value.(bson.D); ok && len(cur) > 0 {
			if id, ok := cur[0].Value.(int64); ok && id != 0 {
				*open = append(*open, id)
			}
		}
	}
	if len(*open) > 20 {
		_ = db.RunCommand(context.Background(), bson.D{{Key: "killCursors", Value: "one"}, {Key: "cursors", Value: bson.A{(*open)[0]}}}).Err()
		*open = (*open)[1:]
	}
	time.Sleep(200 * time.Millisecond)
}

func soakDrop(t *testing.T, addr string) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return
	}
	cmd := append(heavyAggregate(), bson.E{Key: "$db", Value: "test"})
	_, _ = nc.Write(wire.AppendMsg(nil, 1, 0, 0, docBytes(t, cmd)))
	time.Sleep(150 * time.Millisecond)
	nc.Close()
}

// serverMemory is serverStatus.mayflyMemory, in bytes.
type serverMemory struct {
	Resident    int64 `bson:"resident"`
	Connections struct {
		Current     int64 `bson:"current"`
		Active      int64 `bson:"active"`
		BufferBytes int64 `bson:"bufferBytes"`
	} `bson:"connections"`
	Cursors struct {
		Open int64 `bson:"open"`
	} `bson:"cursors"`
	Storage struct {
		BlockCacheBytes int64 `bson:"blockCacheBytes"`
		MemTableBytes   int64 `bson:"memTableBytes"`
		ResidentCache   int64 `bson:"residentCacheBytes"`
		OutsideGoHeap   bool  `bson:"outsideGoHeap"`
	} `bson:"storage"`
	GoHeap struct {
		Resident     int64 `bson:"resident"`
		Objects      int64 `bson:"objects"`
		Live         int64 `bson:"live"`
		Free         int64 `bson:"free"`
		Unused       int64 `bson:"unused"`
		Stacks       int64 `bson:"stacks"`
		RuntimeOther int64 `bson:"runtimeOther"`
	} `bson:"goHeap"`
	Unaccounted int64 `bson:"unaccounted"`
}

func soakMemory(t *testing.T, c *mongo.Client) serverMemory {
	t.Helper()
	m, err := readServerMemory(c, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func readServerMemory(c *mongo.Client, wait time.Duration) (serverMemory, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var status struct {
		Memory serverMemory `bson:"mayflyMemory"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&status); err != nil {
		return serverMemory{}, fmt.Errorf("serverStatus: %w", err)
	}
	if status.Memory.Resident == 0 {
		return serverMemory{}, errors.New("serverStatus has no mayflyMemory.resident")
	}
	return status.Memory, nil
}

// soakSettled waits, once the clients have stopped, for the operations
// still running to end (those of clients that left must be interrupted)
// and for the server to give back what it freed, and returns its account
// then: what stays after the soak. It reports false if operations were
// still running after two minutes.
func soakSettled(t *testing.T, c *mongo.Client, base serverMemory) (serverMemory, bool) {
	t.Helper()
	start := time.Now()
	first, err := soakRunningOps(c)
	n := first
	for (n > 0 || err != nil) && time.Since(start) < 2*time.Minute {
		time.Sleep(time.Second)
		n, err = soakRunningOps(c)
	}
	if n > 0 || err != nil {
		t.Errorf("operations still running 2 min after the clients stopped: %d (%v); %d when they stopped", n, err, first)
		return soakMemory(t, c), false
	}
	t.Logf("%d operations still running when the clients stopped; all ended after %v", first, time.Since(start).Round(time.Second))
	time.Sleep(3 * time.Second) // at least one return of freed memory
	prev := soakMemory(t, c)
	for deadline := time.Now().Add(soakSettleWait); time.Now().Before(deadline); {
		time.Sleep(time.Second)
		m := soakMemory(t, c)
		if d := m.Resident - prev.Resident; d < 4<<20 && d > -4<<20 && m.GoHeap.Objects-m.GoHeap.Live < soakSlack {
			return m, true
		}
		prev = m
	}
	t.Logf("resident memory still moving, or garbage not yet collected (%d MiB), %v after the operations ended: %+d MiB",
		(prev.GoHeap.Objects-prev.GoHeap.Live)>>20, soakSettleWait+3*time.Second, (prev.Resident-base.Resident)>>20)
	return prev, true
}

// soakSettleWait bounds the wait for the server's memory to settle: still,
// and its garbage collected. The server's forced return of freed memory
// waits ten times the last one's duration (server.costFactor), and one
// under the soak's peak heap on a loaded machine takes seconds: the
// settled state may come tens of seconds after the last operation.
const soakSettleWait = 60 * time.Second

// soakRunningOps counts the active operations other than the currentOp
// asking.
func soakRunningOps(c *mongo.Client) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ops struct {
		Inprog []struct {
			Active  bool   `bson:"active"`
			Command bson.D `bson:"command"`
		} `bson:"inprog"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}}).Decode(&ops); err != nil {
		return 0, fmt.Errorf("currentOp: %w", err)
	}
	n := 0
	for _, op := range ops.Inprog {
		if op.Active && (len(op.Command) == 0 || op.Command[0].Key != "currentOp") {
			n++
		}
	}
	return n, nil
}

// String is the account in MiB, part by part.
func (m serverMemory) String() string {
	mib := func(b int64) int64 { return b >> 20 }
	return fmt.Sprintf("resident %d MiB = Go runtime %d (heap objects %d of which live %d, free %d, unused %d, stacks %d, runtime %d) + storage outside the Go heap %d (block cache %d, memtables %d, outside: %v) + unaccounted %d; %d connections (%d active) holding %d KiB of buffers; %d cursors",
		mib(m.Resident), mib(m.GoHeap.Resident), mib(m.GoHeap.Objects), mib(m.GoHeap.Live), mib(m.GoHeap.Free), mib(m.GoHeap.Unused),
		mib(m.GoHeap.Stacks), mib(m.GoHeap.RuntimeOther), mib(m.storageOutside()), mib(m.Storage.BlockCacheBytes), mib(m.Storage.MemTableBytes),
		m.Storage.OutsideGoHeap, mib(m.Unaccounted), m.Connections.Current, m.Connections.Active, m.Connections.BufferBytes>>10, m.Cursors.Open)
}

func (m serverMemory) storageOutside() int64 {
	if !m.Storage.OutsideGoHeap {
		return 0
	}
	return m.Storage.BlockCacheBytes + m.Storage.MemTableBytes
}

// The soak's memory budget, part by part (docs/design/0006-reliability.md).
const (
	// An idle connection keeps its 8 KiB socket buffer and at most 256 KiB
	// in each of its read, inflate, reply, compressed-reply and encoder
	// buffers.
	soakPerConnection = 8<<10 + 5*256<<10
	// soakBigCursor keeps at most 20 cursors open, each holding its
	// compiled $in of 100 000 values (16 bytes a value and the value:
	// about 3.2 MB).
	soakCursors   = 21
	soakPerCursor = 4 << 20
	// pebblestore: a 64 MiB block cache, memtables of 16 MiB of which at
	// most 4 queued and one being filled.
	soakBlockCache = 64 << 20
	soakMemTables  = 5 * 16 << 20
	// The resident cache in front of pebble, at its default bound, in the
	// Go heap.
	soakResidentCache = rescache.DefaultBytes
	// Sessions, the catalog, statistics and the runtime's own tables.
	soakHeapOther = 32 << 20
	// What the runtime and the C allocator keep beyond live objects once
	// idle: the garbage collector's headroom is returned within seconds.
	soakSlack = 32 << 20
)

// checkSoakBudget checks the end-of-soak account against the budget of
// each part, and the growth of the whole against their sum.
func checkSoakBudget(t *testing.T, base, end serverMemory) {
	t.Helper()
	within := func(part string, got, budget int64) {
		t.Logf("budget: %-28s %6d KiB of %6d KiB", part, got>>10, budget>>10)
		if got > budget {
			t.Errorf("%s: %d MiB, over its budget of %d MiB", part, got>>20, budget>>20)
		}
	}
	conns := end.Connections.Current * soakPerConnection
	cursors := min(end.Cursors.Open, soakCursors) * soakPerCursor
	within("connection buffers", end.Connections.BufferBytes, conns)
	if end.Cursors.Open > soakCursors {
		t.Errorf("%d cursors open, the soak keeps at most %d", end.Cursors.Open, soakCursors)
	}
	within("block cache", end.Storage.BlockCacheBytes, soakBlockCache)
	within("memtables", end.Storage.MemTableBytes, soakMemTables)
	within("resident cache", end.Storage.ResidentCache, soakResidentCache)
	live := conns + cursors + soakHeapOther + soakResidentCache
	if !end.Storage.OutsideGoHeap {
		live += soakBlockCache + soakMemTables
	}
	within("Go heap live growth", end.GoHeap.Live-base.GoHeap.Live, live)
	within("Go runtime resident growth", end.GoHeap.Resident-base.GoHeap.Resident, live+soakSlack)
	within("unaccounted growth", end.Unaccounted-base.Unaccounted, soakSlack)
	total := live + 2*soakSlack
	if end.Storage.OutsideGoHeap {
		total += soakBlockCache + soakMemTables
	}
	within("resident growth", end.Resident-base.Resident, total)
}
