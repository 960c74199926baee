package integration

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"time"

	"github.com/anishathalye/porcupine"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// casInput is one operation on a register (a document by its _id):
// Kind is "read", "insert" (only if absent) or "cas" (Old to New).
type casInput struct {
	Kind     string
	Key      int32
	Old, New int64
}

// casOutput is what the client saw: OK for an insert or CAS that took
// effect, Value for a read (0: absent), Unknown when the reply was lost.
type casOutput struct {
	OK      bool
	Value   int64
	Unknown bool
}

// casModel is a set of registers checked key by key; 0 is absent. An
// operation whose outcome is unknown may have taken effect or not, at
// any time after its call.
var casModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int32][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(casInput).Key
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(byKey))
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		in, out, cur := input.(casInput), output.(casOutput), state.(int64)
		switch in.Kind {
		case "read":
			return out.Value == cur, cur
		case "insert":
			return stepConditional(cur == 0, out, in.New, cur)
		default:
			return stepConditional(cur == in.Old, out, in.New, cur)
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(casInput), output.(casOutput)
		switch {
		case in.Kind == "read":
			return fmt.Sprintf("read(%d) -> %d", in.Key, out.Value)
		case out.Unknown:
			return fmt.Sprintf("%s(%d, %d->%d) -> ?", in.Kind, in.Key, in.Old, in.New)
		}
		return fmt.Sprintf("%s(%d, %d->%d) -> %v", in.Kind, in.Key, in.Old, in.New, out.OK)
	},
}

// stepConditional steps a write that applies when matches holds.
func stepConditional(matches bool, out casOutput, next, cur int64) (bool, any) {
	switch {
	case out.Unknown && matches:
		return true, next
	case out.Unknown:
		return true, cur
	case out.OK:
		return matches, next
	}
	return !matches, cur
}

// runRegisterClient reads, inserts and compare-and-sets registers by
// shard key through the router until ctx ends, recording each operation.
func runRegisterClient(ctx context.Context, coll *mongo.Collection, client int, seed uint64, run *jepsenRun) {
	rng := rand.New(rand.NewPCG(seed, uint64(client)))
	known := map[int32]int64{}
	for ctx.Err() == nil {
		key := int32(rng.IntN(jepsenKeys))
		call := time.Now().UnixNano()
		in, out, ok := registerOnce(coll, rng, key, known, run)
		if !ok {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		ret := time.Now().UnixNano()
		if out.Unknown {
			ret = math.MaxInt64
		}
		run.mu.Lock()
		run.history = append(run.history, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret})
		run.mu.Unlock()
	}
}

// registerOnce does one operation; ok is false for a failed read, which
// saw nothing and is left out of the history.
func registerOnce(coll *mongo.Collection, rng *rand.Rand, key int32, known map[int32]int64, run *jepsenRun) (casInput, casOutput, bool) {
	ctx := context.Background()
	if rng.IntN(2) == 0 {
		var doc struct{ V int64 }
		err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: key}}).Decode(&doc)
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return casInput{}, casOutput{}, false
		}
		known[key] = doc.V
		return casInput{Kind: "read", Key: key}, casOutput{Value: doc.V}, true
	}
	next := run.next.Add(1)
	if known[key] == 0 {
		_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: key}, {Key: "v", Value: next}})
		if err == nil {
			known[key] = next
		}
		return casInput{Kind: "insert", Key: key, New: next}, writeOutcome(err, mongo.IsDuplicateKeyError(err)), true
	}
	old := known[key]
	err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: key}, {Key: "v", Value: old}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: next}}}}).Err()
	if err == nil {
		known[key] = next
	}
	return casInput{Kind: "cas", Key: key, Old: old, New: next}, writeOutcome(err, errors.Is(err, mongo.ErrNoDocuments)), true
}

// writeOutcome: no error took effect; a refusal (refused) surely did
// not; any other error leaves the outcome unknown.
func writeOutcome(err error, refused bool) casOutput {
	switch {
	case err == nil:
		return casOutput{OK: true}
	case refused:
		return casOutput{}
	}
	return casOutput{Unknown: true}
}

// runInserter inserts, w:majority, documents that expire one to five
// seconds later and documents that never expire, alternately; the
// acknowledged durable ones must all be read back at the end.
func runInserter(ctx context.Context, coll *mongo.Collection, run *jepsenRun) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	for i := int32(0); ctx.Err() == nil && i < 100_000; i++ {
		expireAt := time.Now().Add(time.Second + time.Duration(rng.IntN(4000))*time.Millisecond)
		run.mu.Lock()
		run.lastExpiry = expireAt // sent, so perhaps stored even if unacknowledged
		run.mu.Unlock()
		if _, err := coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: ttlIDBase + i},
			{Key: "expireAt", Value: expireAt}}); err == nil {
			run.mu.Lock()
			run.ttlAcked++
			run.mu.Unlock()
		}
		if _, err := coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: durableIDBase + i}}); err == nil {
			run.mu.Lock()
			run.acked = append(run.acked, durableIDBase+i)
			run.ackedAt[durableIDBase+i] = time.Now()
			run.mu.Unlock()
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// scanPaths are the read paths the scanner takes in turn: a fan-out
// find, an aggregation, and a find over the expiring documents' ids.
var scanPaths = []func(ctx context.Context, coll *mongo.Collection) (*mongo.Cursor, error){
	func(ctx context.Context, coll *mongo.Collection) (*mongo.Cursor, error) {
		return coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(50))
	},
	func(ctx context.Context, coll *mongo.Collection) (*mongo.Cursor, error) {
		return coll.Aggregate(ctx, bson.A{bson.D{{Key: "$match", Value: bson.D{}}}})
	},
	func(ctx context.Context, coll *mongo.Collection) (*mongo.Cursor, error) {
		return coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: int32(ttlIDBase)},
			{Key: "$lt", Value: int32(durableIDBase)}}}})
	},
}

// runScanner reads the whole collection through the router again and
// again: no scan may return an _id twice, nor a document whose expireAt
// had passed when the read was sent.
func runScanner(ctx context.Context, coll *mongo.Collection, run *jepsenRun) {
	for i := 0; ctx.Err() == nil; i++ {
		path := i % len(scanPaths)
		sent := time.Now().Truncate(time.Millisecond)
		cur, err := scanPaths[path](context.Background(), coll)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if checkScan(cur, path, sent, run) {
			run.mu.Lock()
			run.scans++
			run.mu.Unlock()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkScan drains one scan, recording anomalies; it reports whether
// the scan completed.
func checkScan(cur *mongo.Cursor, path int, sent time.Time, run *jepsenRun) bool {
	defer func() { _ = cur.Close(context.Background()) }()
	seen := map[int32]bool{}
	for cur.Next(context.Background()) {
		id := cur.Current.Lookup("_id").Int32()
		if seen[id] {
			run.anomaly("scan path %d sent at %v returned _id %d twice", path, sent, id)
		}
		seen[id] = true
		if at, ok := cur.Current.Lookup("expireAt").DateTimeOK(); ok && !time.UnixMilli(at).After(sent) {
			run.anomaly("scan path %d sent at %v returned _id %d, expired at %v", path, sent.UTC(), id, time.UnixMilli(at).UTC())
		}
	}
	return cur.Err() == nil
}

// runMigrationLoop moves ranges of the collection back and forth until
// ctx ends: whole chunks by bounds, and the lower half of a chunk by
// moveRange (which splits it) while there are few chunks.
func runMigrationLoop(ctx context.Context, cl *mongo.Client, seed uint64, run *jepsenRun) {
	rng := rand.New(rand.NewPCG(seed, 99))
	admin := cl.Database("admin")
	for ctx.Err() == nil {
		cs, err := routedChunks(cl)
		if err != nil || len(cs) == 0 {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		ch := cs[rng.IntN(len(cs))]
		cmd := bson.D{{Key: "moveChunk", Value: "test." + jepsenColl}, {Key: "bounds", Value: bson.A{ch.Min, ch.Max}},
			{Key: "to", Value: otherShard(ch.Shard)}}
		if lo, hi := boundInt(ch.Min, math.MinInt64), boundInt(ch.Max, math.MaxInt64); len(cs) < 12 && rng.IntN(2) == 0 && hi-lo > 2 {
			cmd = bson.D{{Key: "moveRange", Value: "test." + jepsenColl}, {Key: "toShard", Value: otherShard(ch.Shard)},
				{Key: "min", Value: ch.Min}, {Key: "max", Value: bson.D{{Key: "_id", Value: lo/2 + hi/2}}}}
		}
		began := time.Now()
		err = runMove(ctx, admin, cmd, run)
		run.event("%s [%v, %v) %s→%s began %s: %v", cmd[0].Key, ch.Min, ch.Max, ch.Shard, otherShard(ch.Shard),
			began.UTC().Format("15:04:05.000"), errOrOK(err))
		run.mu.Lock()
		if err == nil {
			run.committed++
		} else {
			run.aborted++
			run.failures[failureKind(err)]++
			run.reasons[failureReason(err)]++
		}
		run.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
}

// moveRetryFor bounds how long the loop sends a move again after a
// refusal a fault explains (the shard still busy with a migration a fault
// interrupted, a primary being elected, the router restarting), as a
// client retries it or the balancer in its next round. A move that still
// fails then counts as failed.
const moveRetryFor = 30 * time.Second

// runMove runs cmd, sent again with a growing pause while it fails for a
// transient cause and the run goes on; each retry is counted by code.
func runMove(ctx context.Context, admin *mongo.Database, cmd bson.D, run *jepsenRun) error {
	deadline := time.Now().Add(moveRetryFor)
	pause := 100 * time.Millisecond
	for {
		moveCtx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		err := admin.RunCommand(moveCtx, cmd).Err()
		cancel()
		if err == nil || !transientMoveError(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		run.mu.Lock()
		run.retries[failureKind(err)]++
		run.mu.Unlock()
		time.Sleep(pause)
		pause = min(2*pause, 2*time.Second)
	}
}

// transientMoveError is a refusal that another attempt may not get.
func transientMoveError(err error) bool {
	var ce mongo.CommandError
	if !errors.As(err, &ce) {
		return true // the connection to the router was lost
	}
	switch ce.Name {
	case "ConflictingOperationInProgress", "HostUnreachable", "OperationFailed", "NotWritablePrimary",
		"InterruptedDueToReplStateChange", "PrimarySteppedDown", "ExceededTimeLimit", "StaleConfig":
		return true
	}
	return false
}

func errOrOK(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// routedChunks reads test.jep's chunks through the router, in key order.
func routedChunks(cl *mongo.Client) ([]shardmeta.Chunk, error) {
	return chunksOf(cl.Database("config"), "test."+jepsenColl)
}

func chunksOf(config *mongo.Database, ns string) ([]shardmeta.Chunk, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var coll shardmeta.Collection
	if err := config.Collection("collections").FindOne(ctx, bson.D{{Key: "_id", Value: ns}}).Decode(&coll); err != nil {
		return nil, fmt.Errorf("config.collections %s: %w", ns, err)
	}
	cur, err := config.Collection("chunks").Find(ctx, bson.D{{Key: "uuid", Value: coll.UUID}},
		options.Find().SetSort(bson.D{{Key: "min", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("config.chunks: %w", err)
	}
	var out []shardmeta.Chunk
	if err := cur.All(ctx, &out); err != nil {
		return nil, fmt.Errorf("config.chunks: %w", err)
	}
	return out, nil
}

// recordVersions polls config.chunks on the config set until ctx ends:
// the collection's version never goes down, a range's version never
// goes down, and no two chunks share a version.
func recordVersions(ctx context.Context, config *mongo.Client, run *jepsenRun) {
	var top bson.Timestamp
	byRange := map[string]bson.Timestamp{}
	for ctx.Err() == nil {
		time.Sleep(250 * time.Millisecond)
		cs, err := chunksOf(config.Database("config"), "test."+jepsenColl)
		if err != nil {
			continue
		}
		run.mu.Lock()
		run.versions++
		run.mu.Unlock()
		seen := map[bson.Timestamp]bool{}
		for _, ch := range cs {
			if seen[ch.Lastmod] {
				run.anomaly("two chunks at version %v", ch.Lastmod)
			}
			seen[ch.Lastmod] = true
			r := fmt.Sprint(ch.Min, ch.Max)
			if was, ok := byRange[r]; ok && tsBefore(ch.Lastmod, was) {
				run.anomaly("chunk %s went from version %v down to %v", r, was, ch.Lastmod)
			}
			byRange[r] = ch.Lastmod
		}
		now := topVersion(cs)
		if tsBefore(now, top) {
			run.anomaly("collection version went from %v down to %v", top, now)
		}
		top = now
	}
}

func tsBefore(a, b bson.Timestamp) bool { return a.T < b.T || a.T == b.T && a.I < b.I }

func topVersion(cs []shardmeta.Chunk) bson.Timestamp {
	var top bson.Timestamp
	for _, ch := range cs {
		if tsBefore(top, ch.Lastmod) {
			top = ch.Lastmod
		}
	}
	return top
}

// failureKind names a failed move by its server error code, for the
// run's figures.
// failureReason is a failed move's error with its ids, hosts and
// numbers blanked, so that failures of one cause count together.
func failureReason(err error) string {
	reason := idsAndNumbers.ReplaceAllString(err.Error(), "#")
	if len(reason) > 160 {
		reason = reason[:160]
	}
	return failureKind(err) + ": " + reason
}

// idsAndNumbers matches ObjectId hex strings and numbers (ports, keys).
var idsAndNumbers = regexp.MustCompile(`[0-9a-f]{24}|-?[0-9]+`)

func failureKind(err error) string {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Name
	}
	return "client error"
}
