package integration

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// registerOp is one read or write of a key in a linearizability history.
type registerOp struct {
	key   int
	write bool
	value int64
}

// registerModel is a set of registers, checked key by key.
var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(registerOp).key
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		in := input.(registerOp)
		if in.write {
			return true, in.value
		}
		return output.(int64) == state.(int64), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(registerOp)
		if in.write {
			return fmt.Sprintf("write(%d, %d)", in.key, in.value)
		}
		return fmt.Sprintf("read(%d) -> %v", in.key, output)
	},
}

// TestReplicaSetLinearizable records single-document reads with
// readConcern "linearizable" and replacements with w: "majority" from
// several clients while the primary is killed and later cut off from the
// other members, and checks the history with porcupine.
func TestReplicaSetLinearizable(t *testing.T) {
	rs := startReplSet(t, 3, "--setParameter", "enableTestCommands=1")
	cl := rs.client(options.Client().SetWriteConcern(writeconcern.Majority()).SetTimeout(10 * time.Second))
	coll := cl.Database("test").Collection("reg", options.Collection().SetReadConcern(readconcern.Linearizable()))
	var (
		mu      sync.Mutex
		history []porcupine.Operation
		next    atomic.Int64
	)
	record := func(op porcupine.Operation) {
		mu.Lock()
		history = append(history, op)
		mu.Unlock()
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for c := 0; c < 6; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for ctx.Err() == nil {
				registerStep(coll, c, rng, &next, record)
			}
		}()
	}
	time.Sleep(2 * time.Second)
	p := rs.waitPrimary(-1, 10*time.Second)
	rs.kill9(p)
	time.Sleep(2 * time.Second)
	rs.start(p)
	p = rs.waitPrimary(-1, 10*time.Second)
	isolate(t, rs, p, true)
	time.Sleep(3 * time.Second)
	isolate(t, rs, p, false)
	time.Sleep(2 * time.Second)
	stop()
	wg.Wait()
	writes, reads := 0, 0
	for _, op := range history {
		if op.Input.(registerOp).write {
			writes++
		} else {
			reads++
		}
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel, history, 60*time.Second)
	t.Logf("history: %d writes, %d linearizable reads; porcupine: %s", writes, reads, res)
	if res != porcupine.Ok {
		path := t.TempDir() + "/history.html"
		_ = porcupine.VisualizePath(registerModel, info, path)
		t.Fatalf("history is not linearizable (%s); visualization in %s", res, path)
	}
	if reads < 50 || writes < 50 {
		t.Fatalf("too few operations to mean anything: %d reads, %d writes", reads, writes)
	}
}

// registerStep does one read or write and records it; a write that fails
// may still have happened, so its return is left open.
func registerStep(coll *mongo.Collection, client int, rng *rand.Rand, next *atomic.Int64, record func(porcupine.Operation)) {
	key := rng.IntN(3)
	call := time.Now().UnixNano()
	if rng.IntN(2) == 0 {
		v := next.Add(1)
		_, err := coll.ReplaceOne(context.Background(), bson.D{{Key: "_id", Value: key}}, bson.D{{Key: "v", Value: v}}, options.Replace().SetUpsert(true))
		ret := time.Now().UnixNano()
		if err != nil {
			ret = math.MaxInt64
		}
		record(porcupine.Operation{ClientId: client, Input: registerOp{key: key, write: true, value: v}, Call: call, Return: ret})
		return
	}
	var doc struct{ V int64 }
	err := coll.FindOne(context.Background(), bson.D{{Key: "_id", Value: key}}).Decode(&doc)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		time.Sleep(20 * time.Millisecond)
		return // a failed read saw nothing
	}
	record(porcupine.Operation{ClientId: client, Input: registerOp{key: key}, Output: doc.V, Call: call, Return: time.Now().UnixNano()})
}

// isolate cuts member p off from the others, or heals every link.
func isolate(t *testing.T, rs *replSet, p int, on bool) {
	t.Helper()
	for i := range rs.addrs {
		var hosts bson.A
		switch {
		case !on:
		case i == p:
			for j, a := range rs.addrs {
				if j != p {
					hosts = append(hosts, a)
				}
			}
		default:
			hosts = bson.A{rs.addrs[p]}
		}
		if hosts == nil {
			hosts = bson.A{}
		}
		if r := rawCall(t, rs.addrs[i], bson.D{{Key: "mayflyReplPartition", Value: hosts}, {Key: "$db", Value: "admin"}}); codeOf(r) != 0 {
			t.Fatalf("partition: %v", r)
		}
	}
}
