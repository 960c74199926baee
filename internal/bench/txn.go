package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TxnResult is the transaction phase on a three-member set: a transfer
// (two $inc updates of two accounts) made as one transaction against the
// same two updates made one after the other without one, by the same
// clients on the same accounts, all with write concern majority.
type TxnResult struct {
	Members  int `json:"members"`
	Clients  int `json:"clients"`
	Accounts int `json:"accounts"`
	// Plain and Txn are the sums of their rounds, which alternate so that
	// a drift of the shared machine weighs on both alike.
	Plain *TransferRun `json:"plain"`
	Txn   *TransferRun `json:"txn"`
	// TotalOK says the accounts still summed to their total after both.
	TotalOK bool `json:"total_ok"`
}

// TransferRun is the transfers of one way over its measured rounds.
type TransferRun struct {
	Seconds      float64 `json:"seconds"`
	Transfers    int64   `json:"transfers"`
	PerSec       float64 `json:"per_sec"`
	Latency      Summary `json:"latency"`
	Errors       int64   `json:"errors"`
	FirstErr     string  `json:"first_error,omitempty"`
	Attempts     int64   `json:"attempts"`      // transactions started, retries included
	Conflicts    int64   `json:"conflicts"`     // attempts aborted by WriteConflict
	ConflictRate float64 `json:"conflict_rate"` // Conflicts / Attempts
	// AbortCauses counts the aborted attempts by the server's code name
	// (or "network", "timeout" for a client's own error).
	AbortCauses map[string]int64 `json:"abort_causes,omitempty"`
}

const (
	txnAccounts   = 1000
	txnBalance    = 1_000_000
	txnCollection = "accounts"
	// txnCommitRetries bounds the retries of a commit whose outcome is
	// unknown, as the drivers' convenient API does by time.
	txnCommitRetries = 3
)

// txnRounds are the measured rounds, true for transactions: plain,
// transactions, transactions, plain.
func txnRounds() []bool { return []bool{false, true, true, false} }

// txnPhase starts a three-member set of this build and measures
// transfers with and without transactions at the configured clients.
func (m *modeRun) txnPhase(ctx context.Context) (*TxnResult, error) {
	rs, err := m.startReplSet(ctx, 3, m.mayflyBin)
	if err != nil {
		return nil, err
	}
	defer rs.stop()
	sz := m.cfg.Sizes
	c, err := mongo.Connect(options.Client().ApplyURI(rs.uri()).SetMaxPoolSize(uint64(sz.Clients + 4)).
		SetWriteConcern(writeconcern.Majority()).SetAppName("mayfly-bench"))
	if err != nil {
		return nil, fmt.Errorf("connect to the set: %w", err)
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	coll := c.Database(benchDB).Collection(txnCollection)
	if err := loadAccounts(ctx, coll); err != nil {
		return nil, err
	}
	res := &TxnResult{Members: 3, Clients: sz.Clients, Accounts: txnAccounts, Plain: &TransferRun{}, Txn: &TransferRun{}}
	if _, err := transferRound(ctx, c, coll, sz.Clients, true, sz.Warmup, &Histogram{}); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	plainLatency, txnLatency := &Histogram{}, &Histogram{}
	for _, inTxn := range txnRounds() {
		run, latency := res.Plain, plainLatency
		if inTxn {
			run, latency = res.Txn, txnLatency
		}
		round, err := transferRound(ctx, c, coll, sz.Clients, inTxn, sz.DurableDuration, latency)
		if err != nil {
			return res, err
		}
		run.add(round)
	}
	res.Plain.Latency, res.Txn.Latency = plainLatency.Summarize(), txnLatency.Summarize()
	res.TotalOK, err = accountsTotalOK(ctx, coll)
	m.logf("transfers on a three-member set, %d clients over %d accounts: %.0f/s in transactions (%.1f%% conflicts, aborts %v), %.0f/s without",
		sz.Clients, txnAccounts, res.Txn.PerSec, 100*res.Txn.ConflictRate, res.Txn.AbortCauses, res.Plain.PerSec)
	return res, err
}

// loadAccounts replaces the accounts collection with txnAccounts
// accounts of txnBalance each.
func loadAccounts(ctx context.Context, coll *mongo.Collection) error {
	if err := coll.Drop(ctx); err != nil {
		return fmt.Errorf("drop accounts: %w", err)
	}
	docs := make([]any, txnAccounts)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "balance", Value: int64(txnBalance)}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		return fmt.Errorf("load accounts: %w", err)
	}
	return nil
}

// accountsTotalOK reports whether the balances still sum to their total:
// every transfer, in a transaction or not, moves money without making it.
func accountsTotalOK(ctx context.Context, coll *mongo.Collection) (bool, error) {
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$group", Value: bson.D{
		{Key: "_id", Value: nil}, {Key: "sum", Value: bson.D{{Key: "$sum", Value: "$balance"}}}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}})
	if err != nil {
		return false, fmt.Errorf("sum the accounts: %w", err)
	}
	var out []struct {
		Sum int64 `bson:"sum"`
		N   int64 `bson:"n"`
	}
	if err := cur.All(ctx, &out); err != nil {
		return false, fmt.Errorf("sum the accounts: %w", err)
	}
	return len(out) == 1 && out[0].N == txnAccounts && out[0].Sum == txnAccounts*txnBalance, nil
}

// transferRound runs clients transferring for d, each in a session of
// its own, and returns what they did; their latencies go into latency.
func transferRound(ctx context.Context, c *mongo.Client, coll *mongo.Collection, clients int, inTxn bool, d time.Duration, latency *Histogram) (*TransferRun, error) {
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	workers := make([]*transferWorker, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range workers {
		w := &transferWorker{coll: coll, inTxn: inTxn, rng: rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano()))),
			run: &TransferRun{AbortCauses: map[string]int64{}}, hist: &Histogram{}}
		workers[i] = w
		sess, err := c.StartSession()
		if err != nil {
			return nil, fmt.Errorf("start session: %w", err)
		}
		defer sess.EndSession(context.WithoutCancel(ctx))
		wg.Go(func() { w.loop(rctx, sess) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	round := &TransferRun{Seconds: time.Since(start).Seconds(), AbortCauses: map[string]int64{}}
	for _, w := range workers {
		round.merge(w.run)
		latency.Merge(w.hist)
	}
	return round, nil
}

// transferWorker is one client: it moves 1 between two random accounts,
// in a transaction or as two updates, until its context ends.
type transferWorker struct {
	coll  *mongo.Collection
	inTxn bool
	rng   *rand.Rand
	run   *TransferRun
	hist  *Histogram
}

// transferLimit bounds one transfer with its retries. The round's end
// does not cut a transfer short: half a plain transfer would break the
// accounts' total, which the phase checks.
const transferLimit = 30 * time.Second

func (w *transferWorker) loop(round context.Context, sess *mongo.Session) {
	for round.Err() == nil {
		from := w.rng.IntN(txnAccounts)
		to := (from + 1 + w.rng.IntN(txnAccounts-1)) % txnAccounts
		ctx, cancel := context.WithTimeout(context.WithoutCancel(round), transferLimit)
		began := time.Now()
		var err error
		if w.inTxn {
			err = w.transaction(ctx, sess, from, to)
		} else {
			err = w.updates(mongo.NewSessionContext(ctx, sess), from, to)
		}
		cancel()
		if err == nil {
			w.run.Transfers++
			w.hist.Add(time.Since(began))
			continue
		}
		w.run.Errors++
		if w.run.FirstErr == "" {
			w.run.FirstErr = err.Error()
		}
	}
}

// updates is the transfer's two updates, each acknowledged by a majority.
func (w *transferWorker) updates(ctx context.Context, from, to int) error {
	for _, move := range [2]struct {
		account int
		delta   int64
	}{{from, -1}, {to, 1}} {
		if _, err := w.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: move.account}},
			bson.D{{Key: "$inc", Value: bson.D{{Key: "balance", Value: move.delta}}}}); err != nil {
			return err
		}
	}
	return nil
}

// transaction runs the two updates as one transaction, retrying as an
// application does (and as the drivers' convenient API does): the whole
// transaction on TransientTransactionError, the commit on
// UnknownTransactionCommitResult. Each aborted attempt is counted by its
// cause.
func (w *transferWorker) transaction(ctx context.Context, sess *mongo.Session, from, to int) error {
	opts := options.Transaction().SetReadConcern(readconcern.Snapshot()).SetWriteConcern(writeconcern.Majority())
	for ctx.Err() == nil {
		w.run.Attempts++
		if err := sess.StartTransaction(opts); err != nil {
			return fmt.Errorf("start transaction: %w", err)
		}
		err := w.updates(mongo.NewSessionContext(ctx, sess), from, to)
		if err == nil {
			err = commitRetrying(ctx, sess)
		}
		if err == nil {
			return nil
		}
		_ = sess.AbortTransaction(context.WithoutCancel(ctx))
		w.countAbort(err)
		if !hasLabel(err, "TransientTransactionError") {
			return err
		}
	}
	return ctx.Err()
}

func commitRetrying(ctx context.Context, sess *mongo.Session) error {
	var err error
	for range txnCommitRetries {
		if err = sess.CommitTransaction(ctx); err == nil || !hasLabel(err, "UnknownTransactionCommitResult") {
			return err
		}
	}
	return err
}

func hasLabel(err error, label string) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorLabel(label)
}

// countAbort counts an aborted attempt by its cause.
func (w *transferWorker) countAbort(err error) {
	cause := "network"
	var ce mongo.CommandError
	var we mongo.WriteException
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		cause = "timeout"
	case errors.As(err, &ce):
		cause = mongoerr.Code(ce.Code).Name()
	case errors.As(err, &we) && len(we.WriteErrors) > 0:
		cause = mongoerr.Code(we.WriteErrors[0].Code).Name()
	}
	if cause == mongoerr.WriteConflict.Name() {
		w.run.Conflicts++
	}
	w.run.AbortCauses[cause]++
}

// merge adds a worker's or a round's counts to r (not its seconds, which
// only a round has).
func (r *TransferRun) merge(o *TransferRun) {
	r.Transfers += o.Transfers
	r.Errors += o.Errors
	r.Attempts += o.Attempts
	r.Conflicts += o.Conflicts
	if r.FirstErr == "" {
		r.FirstErr = o.FirstErr
	}
	for cause, n := range o.AbortCauses {
		r.AbortCauses[cause] += n
	}
}

// add adds a round to the run's totals and recomputes its rates.
func (r *TransferRun) add(round *TransferRun) {
	if r.AbortCauses == nil {
		r.AbortCauses = map[string]int64{}
	}
	r.merge(round)
	r.Seconds += round.Seconds
	r.PerSec = float64(r.Transfers) / r.Seconds
	if r.Attempts > 0 {
		r.ConflictRate = float64(r.Conflicts) / float64(r.Attempts)
	}
}

// causesText lists abort causes, most frequent first.
func causesText(causes map[string]int64) string {
	if len(causes) == 0 {
		return "none"
	}
	names := make([]string, 0, len(causes))
	for name := range causes {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return causes[names[i]] > causes[names[j]] })
	s := ""
	for i, name := range names {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %s", name, fmtN(float64(causes[name])))
	}
	return s
}

// The transaction target (issue #38: a transfer in a transaction at
// least half as fast as its two updates without).
const tTxnRatio = "replica set: transfer transactions / the same two updates without, 64 clients"

func txnTargetDefs() []targetDef {
	return []targetDef{{tTxnRatio, "≥ 0.5", atLeast(0.5), txnRatio}}
}

func txnRatio(m *ModeReport) (float64, string, bool) {
	r := m.Txn
	if r == nil || r.Plain == nil || r.Txn == nil || r.Plain.PerSec == 0 {
		return 0, "", false
	}
	note := fmt.Sprintf("%s / %s transfers/s", fmtN(r.Txn.PerSec), fmtN(r.Plain.PerSec))
	if !r.TotalOK {
		note = incomplete + "the accounts no longer sum to their total; " + note
	}
	return r.Txn.PerSec / r.Plain.PerSec, note, true
}

// txnCell is the transactions' own figures: latency, conflicts and what
// aborted their attempts.
func txnCell(m *ModeReport) string {
	r := m.Txn
	if r == nil || r.Txn == nil || r.Plain == nil {
		return missing
	}
	t := r.Txn
	s := fmt.Sprintf("%d clients, %s accounts: p50 / p99 %s / %s ms in transactions, %s / %s ms without; %s attempts, conflict rate %.1f%%; aborts: %s",
		r.Clients, fmtN(float64(r.Accounts)), fmtMs(t.Latency.P50Ms), fmtMs(t.Latency.P99Ms), fmtMs(r.Plain.Latency.P50Ms), fmtMs(r.Plain.Latency.P99Ms),
		fmtN(float64(t.Attempts)), 100*t.ConflictRate, causesText(t.AbortCauses))
	if n := t.Errors + r.Plain.Errors; n > 0 {
		s += fmt.Sprintf("; %d transfers failed", n)
	}
	return s
}

func txnRows(rep *Report) []row {
	return []row{
		{"transfers on a three-member set", PhaseTxn, txnCell},
		{"**" + tTxnRatio + "**", PhaseTxn, targetCell(rep, tTxnRatio)},
	}
}
