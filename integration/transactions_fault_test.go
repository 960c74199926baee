package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/txncheck"
	"github.com/mayflydb/mayfly/internal/txnload"
)

// txnFaultPlan is the size of a Jepsen-style fault run: how long the
// clients run, how many faults the nemesis injects meanwhile (kill -9 of
// the primary and a partition of it, alternately), and the seed of the
// clients' operations.
type txnFaultPlan struct {
	run    time.Duration
	faults int
	seed   uint64
}

// The short size CI runs; MAYFLY_TXN_FAULT_SECONDS and MAYFLY_TXN_FAULTS
// select a long one, MAYFLY_TXN_SEED replays a seed.
const (
	txnFaultDefaultRun    = 24 * time.Second
	txnFaultDefaultFaults = 3
	txnFaultClients       = 8
	// txnFaultTxnLimit bounds one transaction with the driver's retries:
	// an election takes a few seconds, a loaded machine more.
	txnFaultTxnLimit = 15 * time.Second
)

func txnFaultPlanFromEnv(t *testing.T) txnFaultPlan {
	t.Helper()
	plan := txnFaultPlan{run: txnFaultDefaultRun, faults: txnFaultDefaultFaults, seed: uint64(time.Now().UnixNano())}
	if v, err := strconv.Atoi(os.Getenv("MAYFLY_TXN_FAULT_SECONDS")); err == nil && v > 0 {
		plan.run = time.Duration(v) * time.Second
	}
	if v, err := strconv.Atoi(os.Getenv("MAYFLY_TXN_FAULTS")); err == nil && v > 0 {
		plan.faults = v
	}
	if v, err := strconv.ParseUint(os.Getenv("MAYFLY_TXN_SEED"), 10, 64); err == nil {
		plan.seed = v
	}
	t.Logf("fault run: %v, %d faults, seed %d (MAYFLY_TXN_SEED replays it)", plan.run, plan.faults, plan.seed)
	return plan
}

// nemesis injects the faults of a run into a replica set, from the test's
// goroutine: kill -9 of the primary and its restart, then a partition
// that cuts the primary off from the others and its healing, in turn.
type nemesis struct {
	rs         *replSet
	rng        *rand.Rand
	kills      int
	partitions int
}

// run spreads plan.faults faults over the first three quarters of the
// run, leaving the rest quiet, so that the clients commit again after
// the last fault before they stop. It returns with every member up and
// every link healed.
func (n *nemesis) run(plan txnFaultPlan) {
	busy := plan.run * 3 / 4
	gap := busy / time.Duration(plan.faults+1)
	start := time.Now()
	for i := range plan.faults {
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * gap)))
		if i%2 == 0 {
			n.killPrimary()
		} else {
			n.partitionPrimary()
		}
	}
}

// killPrimary kills the primary with SIGKILL, leaves it down for a while
// (1–2 s, so that the others elect a new one meanwhile or not), and
// restarts it on its data.
func (n *nemesis) killPrimary() {
	p := n.rs.waitPrimary(-1, 30*time.Second)
	n.rs.kill9(p)
	n.kills++
	time.Sleep(time.Second + time.Duration(n.rng.IntN(1000))*time.Millisecond)
	n.rs.start(p)
}

// partitionPrimary cuts the primary off from the other members (clients
// still reach every member) for long enough that the majority elects
// another, then heals every link.
func (n *nemesis) partitionPrimary() {
	p := n.rs.waitPrimary(-1, 30*time.Second)
	isolate(n.rs.t, n.rs, p, true)
	n.partitions++
	time.Sleep(3*time.Second + time.Duration(n.rng.IntN(1000))*time.Millisecond)
	isolate(n.rs.t, n.rs, p, false)
}

func (n *nemesis) String() string {
	return fmt.Sprintf("%d kills, %d partitions", n.kills, n.partitions)
}

// boundedTxns gives each transaction of a workload its own deadline, so
// that one stuck behind a fault cannot hold its client past the run.
type boundedTxns struct {
	*txnload.MongoClient
	limit time.Duration
}

func (b boundedTxns) ListAppend(ctx context.Context, ops []txncheck.MicroOp) ([]txncheck.MicroOp, error) {
	ctx, cancel := context.WithTimeout(ctx, b.limit)
	defer cancel()
	return b.MongoClient.ListAppend(ctx, ops)
}

func (b boundedTxns) Transfer(ctx context.Context, from, to int, amount int64) error {
	ctx, cancel := context.WithTimeout(ctx, b.limit)
	defer cancel()
	return b.MongoClient.Transfer(ctx, from, to, amount)
}

func (b boundedTxns) ReadBalances(ctx context.Context) (map[int]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, b.limit)
	defer cancel()
	return b.MongoClient.ReadBalances(ctx)
}

// underFaults runs workload from its own goroutine for plan.run while the
// nemesis injects the plan's faults, and returns the nemesis once both
// are done and the set has a primary again.
func underFaults(t *testing.T, rs *replSet, plan txnFaultPlan, workload func(ctx context.Context) error) *nemesis {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), plan.run)
	defer cancel()
	var wg sync.WaitGroup
	var workErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		workErr = workload(ctx)
	}()
	n := &nemesis{rs: rs, rng: rand.New(rand.NewPCG(plan.seed, 1))}
	n.run(plan)
	wg.Wait()
	if workErr != nil && !errors.Is(workErr, context.DeadlineExceeded) {
		t.Fatalf("workload: %v", workErr)
	}
	rs.waitPrimary(-1, 30*time.Second)
	return n
}

// saveHistory writes a failing run's history and seed as JSON to a
// directory that outlives the test, and says where.
func saveHistory(t *testing.T, name string, plan txnFaultPlan, events any) {
	t.Helper()
	dir, err := os.MkdirTemp("", "mayfly-"+name+"-")
	if err != nil {
		t.Errorf("saving the history: %v", err)
		return
	}
	body, err := json.MarshalIndent(map[string]any{"seed": plan.seed, "run": plan.run.String(), "faults": plan.faults, "events": events}, "", " ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "history.json"), body, 0o644)
	}
	if err != nil {
		t.Errorf("saving the history: %v", err)
		return
	}
	t.Logf("history of the failing run (seed %d): %s", plan.seed, filepath.Join(dir, "history.json"))
}

// TestTransactionsListAppendUnderFaults is the Jepsen-style run: 8
// clients' list-append transactions through the Go driver against three
// real processes while the nemesis kills the primary with SIGKILL and
// partitions it, then a final read of every key once healed. The checker
// must find no anomaly snapshot isolation forbids, no acknowledged append
// may be missing from the final read, and the members must end equal.
func TestTransactionsListAppendUnderFaults(t *testing.T) {
	plan := txnFaultPlanFromEnv(t)
	rs := startReplSet(t, 3, "--setParameter", "enableTestCommands=1")
	client := txnload.NewMongoClient(rs.client(), "jepsen")
	if err := client.SetupListAppend(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	const keys = 5
	rec := txnload.NewRecorder[[]txncheck.MicroOp](clock.Real{})
	cfg := txnload.ListAppendConfig{Load: txnload.Load{Clients: txnFaultClients, Txns: 100_000, Seed: plan.seed}, Keys: keys, MaxOps: 4}
	nem := underFaults(t, rs, plan, func(ctx context.Context) error {
		return txnload.RunListAppend(ctx, cfg, boundedTxns{client, txnFaultTxnLimit}, rec)
	})
	final := finalListRead(t, client, rec, keys)
	res, counts, err := txnload.CheckListAppend(rec.Events())
	if err != nil {
		t.Fatal(err)
	}
	lost := lostAppends(rec.Events(), final)
	t.Logf("list-append under faults: %d transactions, ok %d, fail %d, info %d; %s; anomalies %v; final lists %v long",
		res.Txns, counts[txncheck.Committed], counts[txncheck.Aborted], counts[txncheck.Indeterminate], nem, anomalyCounts(res), listLengths(final))
	if !res.Valid() || len(lost) > 0 {
		saveHistory(t, "listappend", plan, rec.Events())
		t.Fatalf("snapshot isolation broken: %s; acknowledged appends missing from the final read: %v", res, lost)
	}
	wantFaultRunDidWork(t, nem, plan, counts[txncheck.Committed])
	rs.waitSameHash("jepsen", 30*time.Second)
}

// anomalyCounts lists every anomaly of the registry with its count, the
// ones not found as 0, so a report shows what was looked for.
func anomalyCounts(res txncheck.Result) string {
	var out []string
	for _, a := range txncheck.Anomalies() {
		out = append(out, fmt.Sprintf("%s %d", a, res.Counts[a]))
	}
	return fmt.Sprint(out)
}

// finalListRead reads every key in one transaction once the faults are
// over, recorded in the history as a transaction of its own process, and
// returns the lists. The set must serve it within a minute.
func finalListRead(t *testing.T, client *txnload.MongoClient, rec *txnload.Recorder[[]txncheck.MicroOp], keys int) map[int][]int {
	t.Helper()
	ops := make([]txncheck.MicroOp, keys)
	for k := range keys {
		ops[k] = txncheck.ReadOp(k)
	}
	deadline := time.Now().Add(time.Minute)
	for process := 1_000_000; ; process++ {
		txn := rec.Invoke(process, ops)
		done, err := boundedTxns{client, txnFaultTxnLimit}.ListAppend(context.Background(), ops)
		if _, recErr := rec.Complete(txn, done, err); recErr != nil {
			t.Fatal(recErr)
		}
		if err == nil {
			lists := map[int][]int{}
			for _, op := range done {
				lists[op.Key] = op.List
			}
			return lists
		}
		if time.Now().After(deadline) {
			t.Fatalf("the final read failed for a minute after the faults: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// lostAppends lists the appends of acknowledged transactions that the
// final read of their key does not hold: writes the set acknowledged and
// then lost.
func lostAppends(events []txnload.Event[[]txncheck.MicroOp], final map[int][]int) []string {
	var lost []string
	for _, ev := range events {
		if ev.Status != txncheck.Committed {
			continue
		}
		for _, op := range ev.Op {
			if op.Kind == txncheck.Append && !slices.Contains(final[op.Key], op.Value) {
				lost = append(lost, fmt.Sprintf("T%d appended %d to key %d", ev.Txn, op.Value, op.Key))
			}
		}
	}
	return lost
}

func listLengths(lists map[int][]int) []int {
	out := make([]int, len(lists))
	for k, l := range lists {
		out[k] = len(l)
	}
	return out
}

// wantFaultRunDidWork fails a run whose nemesis injected fewer faults than
// planned or whose clients committed too little to mean anything.
func wantFaultRunDidWork(t *testing.T, nem *nemesis, plan txnFaultPlan, committed int) {
	t.Helper()
	if nem.kills+nem.partitions != plan.faults || nem.kills == 0 || (plan.faults > 1 && nem.partitions == 0) {
		t.Fatalf("the nemesis injected %s, want %d faults of both kinds", nem, plan.faults)
	}
	if committed < 50 {
		t.Fatalf("only %d transactions committed in %v", committed, plan.run)
	}
}

// TestTransactionsBankUnderFaults runs transfers between accounts and
// snapshot reads of every balance from 8 clients while the nemesis kills
// and partitions the primary: every committed read sums to the total,
// and so do the balances once healed, on every member.
func TestTransactionsBankUnderFaults(t *testing.T) {
	plan := txnFaultPlanFromEnv(t)
	rs := startReplSet(t, 3, "--setParameter", "enableTestCommands=1")
	cl := rs.client()
	client := txnload.NewMongoClient(cl, "jepsen")
	const accounts, total = 8, 800
	if err := client.SetupBank(ctxT(t), accounts, total); err != nil {
		t.Fatal(err)
	}
	rec := txnload.NewRecorder[txnload.BankOp](clock.Real{})
	cfg := txnload.BankConfig{Load: txnload.Load{Clients: txnFaultClients, Txns: 100_000, Seed: plan.seed}, Accounts: accounts, MaxTransfer: 20}
	nem := underFaults(t, rs, plan, func(ctx context.Context) error {
		return txnload.RunBank(ctx, cfg, boundedTxns{client, txnFaultTxnLimit}, rec)
	})
	res, err := txnload.CheckBank(rec.Events(), accounts, total)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bank under faults: %d transfers and %d reads ok, %d fail, %d info; %s; %d wrong reads",
		res.Transfers, res.Reads, res.Failed, res.Indeterminate, nem, res.WrongReads)
	if !res.Valid() {
		saveHistory(t, "bank", plan, rec.Events())
		t.Fatalf("snapshot reads broke the bank's invariant: %v", res.Examples)
	}
	rs.waitSameHash("jepsen", 30*time.Second)
	wantBankTotal(t, rs, accounts, total)
	wantFaultRunDidWork(t, nem, plan, res.Transfers+res.Reads)
}

// wantBankTotal reads the accounts on every member once healed (outside
// any transaction, majority read concern) and wants the total on each.
func wantBankTotal(t *testing.T, rs *replSet, accounts int, total int64) {
	t.Helper()
	for i := range rs.addrs {
		direct := rs.direct(i)
		coll := direct.Database("jepsen").Collection("accounts", options.Collection().SetReadConcern(readconcern.Majority()))
		var docs []struct{ Balance int64 }
		cur, err := coll.Find(ctxT(t), bson.D{})
		if err == nil {
			err = cur.All(ctxT(t), &docs)
		}
		_ = direct.Disconnect(context.Background())
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		var sum int64
		for _, d := range docs {
			sum += d.Balance
		}
		if len(docs) != accounts || sum != total {
			t.Fatalf("member %d holds %d accounts summing to %d, want %d summing to %d", i, len(docs), sum, accounts, total)
		}
	}
}
