package integration

import (
	"context"
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

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/wire"
)

// soakDuration is 3 s in CI; MAYFLY_SOAK=10m runs the real soak.
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("MAYFLY_SOAK")
	if v == "" {
		return 3 * time.Second
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
// journaled CRUD, and checks that resident memory stays bounded and every
// normal operation succeeds.
func TestHostileSoak(t *testing.T) {
	dur := soakDuration(t)
	srv := startServer(t, app.Config{DataDir: t.TempDir()})
	addr := srv.app.Addr().String()
	c := connect(t, srv)
	seedOne(t, c.Database("test"))
	baseline := residentBytes(t)
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
	samples := soakWatchMemory(ctx, t)
	wg.Wait()
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
	t.Logf("soak %v: %d hostile operations; normal clients %d operations, %d errors, p99 %v, slowest %v; resident baseline %d MiB, peak +%d MiB (first half +%d, second half +%d)",
		dur, hostileOps.Load(), ops, errs, p99, slowest, baseline>>20, (peak-baseline)>>20, (first-baseline)>>20, (second-baseline)>>20)
	if errs > 0 || ops == 0 {
		t.Errorf("normal clients: %d errors in %d operations", errs, ops)
	}
	// Bounded: a ceiling, and no climb from the first half to the second
	// (what a leak per operation would show).
	if peak-baseline > 3<<29 {
		t.Errorf("resident memory grew by %d MiB", (peak-baseline)>>20)
	}
	if dur >= time.Minute && second-baseline > (first-baseline)*3/2+100<<20 {
		t.Errorf("resident memory climbs: peak +%d MiB in the first half, +%d MiB in the second", (first-baseline)>>20, (second-baseline)>>20)
	}
	pingFresh(t, addr)
}

// soakWatchMemory samples resident memory each 250 ms until ctx ends.
func soakWatchMemory(ctx context.Context, t *testing.T) []int64 {
	var samples []int64
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return samples
		case <-tick.C:
			samples = append(samples, rss(t))
		}
	}
}

// soakPeaks returns the peaks of the first and second half of samples and
// the overall peak.
func soakPeaks(samples []int64) (first, second, peak int64) {
	for i, v := range samples {
		if i < len(samples)/2 {
			first = max(first, v)
		} else {
			second = max(second, v)
		}
	}
	return first, second, max(first, second)
}

// rss reads VmRSS without forcing a collection (residentBytes does), so
// the sample is what the process really holds at that moment.
func rss(t *testing.T) int64 {
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(raw), &size, &resident); err != nil {
		t.Fatal(err)
	}
	return resident * int64(os.Getpagesize())
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
