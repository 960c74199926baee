package activity

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
)

func TestBusyWithin(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	r := NewRegistry(clk)
	if r.BusyWithin(100 * time.Millisecond) {
		t.Fatal("a new registry has seen no client")
	}
	internal := r.Begin(Op{Desc: "TTLMonitor"})
	if r.BusyWithin(100 * time.Millisecond) {
		t.Fatal("internal work is not client activity")
	}
	r.End(internal)
	id := r.Begin(Op{Client: "127.0.0.1:5000"})
	clk.Advance(time.Second)
	if !r.BusyWithin(100 * time.Millisecond) {
		t.Fatal("a client operation in flight makes the server busy")
	}
	r.End(id)
	clk.Advance(100 * time.Millisecond)
	if !r.BusyWithin(100 * time.Millisecond) {
		t.Fatal("an operation that ended 100ms ago still counts")
	}
	clk.Advance(time.Millisecond)
	if r.BusyWithin(100 * time.Millisecond) {
		t.Fatal("nothing for longer than d: not busy")
	}
}

// An operation waiting for data (an awaitData getMore, an awaitable
// hello) shows in currentOp but does not keep the server busy.
func TestWaitingIsNotBusy(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	r := NewRegistry(clk)
	id := r.Begin(Op{Client: "127.0.0.1:5000", Kind: "getmore"})
	resume := r.Wait(id)
	if n := r.Active(); n != 0 {
		t.Fatalf("Active() = %d with the one operation waiting, want 0", n)
	}
	if len(r.Snapshot()) != 1 {
		t.Fatal("a waiting operation left currentOp")
	}
	clk.Advance(100 * time.Millisecond)
	if !r.BusyWithin(100 * time.Millisecond) {
		t.Fatal("the operation began to wait 100ms ago: that still counts")
	}
	clk.Advance(time.Millisecond)
	if r.BusyWithin(100 * time.Millisecond) {
		t.Fatal("an operation waiting for longer than d keeps the server busy")
	}
	resume()
	if !r.BusyWithin(100*time.Millisecond) || r.Active() != 1 {
		t.Fatal("an operation that stopped waiting is working again")
	}
	r.End(id)
	r.Wait(id)() // ended: nothing to mark
	if r.Active() != 0 {
		t.Fatal("an ended operation counted")
	}
}

// OpKind names a command's op as mongod's currentOp and profiler do.
func TestOpKind(t *testing.T) {
	want := map[string]string{
		"find": "query", "insert": "insert", "update": "update", "delete": "remove",
		"getMore": "getmore", "aggregate": "command", "findAndModify": "command", "count": "command",
	}
	for name, kind := range want {
		if got := OpKind(name); got != kind {
			t.Errorf("OpKind(%q) = %q, want %q", name, got, kind)
		}
	}
}

// TestOpShowsItsTransaction: an operation given a transaction report
// shows it, rendered at the time currentOp asks; others show none.
func TestOpShowsItsTransaction(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	r := NewRegistry(clk)
	plain := r.Begin(Op{Client: "127.0.0.1:5000"})
	inTxn := r.Begin(Op{Client: "127.0.0.1:5001"})
	r.SetTransaction(inTxn, func(now time.Time) bson.D { return bson.D{{Key: "at", Value: now}} })
	clk.Advance(time.Second)
	docs := r.Docs(clk.Now(), "localhost")
	shown := map[int32]any{}
	for _, d := range docs {
		id, _ := bsonutil.Field(d, "opid")
		shown[id.(int32)], _ = bsonutil.Field(d, "transaction")
	}
	if shown[int32(plain)] != nil {
		t.Fatalf("an operation outside a transaction shows %v", shown[int32(plain)])
	}
	want := bson.D{{Key: "at", Value: clk.Now()}}
	if got, _ := shown[int32(inTxn)].(bson.D); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("the transaction's statement shows %v, want %v", shown[int32(inTxn)], want)
	}
}

// An ended operation's entry is reused by the next one: a killOp of the
// ended operation must not reach the new one, and the new one shows
// nothing of the old.
func TestReusedEntryIsTheNewOperations(t *testing.T) {
	r := NewRegistry(clock.NewManual(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)))
	var killed []string
	first := r.BeginCancelable(Op{Client: "a", NS: "db.first"}, func(error) { killed = append(killed, "first") })
	r.SetTransaction(first, func(time.Time) bson.D { return bson.D{{Key: "txnNumber", Value: int64(1)}} })
	r.End(first)
	second := r.BeginCancelable(Op{Client: "b", NS: "db.second"}, func(error) { killed = append(killed, "second") })
	if r.Kill(first) {
		t.Fatal("killOp of an ended operation found it")
	}
	ops := r.Snapshot()
	if len(ops) != 1 || ops[0].ID != second || ops[0].NS != "db.second" || ops[0].Transaction != nil {
		t.Fatalf("in flight: %+v, want only the second operation, without the first's transaction", ops)
	}
	if !r.Kill(second) || len(killed) != 1 || killed[0] != "second" {
		t.Fatalf("killed %v, want [second]", killed)
	}
	r.End(second)
	if got := testing.AllocsPerRun(100, func() { r.End(r.Begin(Op{Client: "c"})) }); got != 0 {
		t.Errorf("Begin and End of an operation allocate %v times, want 0", got)
	}
}

func TestShouldProfileFollowsEveryDatabasesLevel(t *testing.T) {
	p := NewProfiler()
	if p.ShouldProfile("app", time.Hour) {
		t.Fatal("profiling is off everywhere at first")
	}
	p.Set("app", ProfileSettings{Level: 2}, false)
	p.Set("other", ProfileSettings{Level: 1, SlowMS: 5}, true)
	if !p.ShouldProfile("app", 0) || p.ShouldProfile("third", time.Hour) {
		t.Fatal("level 2 profiles all of app's operations, level 0 none of third's")
	}
	if p.ShouldProfile("other", 4*time.Millisecond) || !p.ShouldProfile("other", 5*time.Millisecond) {
		t.Fatal("level 1 profiles other's operations of slowms and more")
	}
	p.Set("app", ProfileSettings{}, false)
	if p.ShouldProfile("app", time.Hour) || !p.ShouldProfile("other", time.Hour) {
		t.Fatal("app turned off, other still on")
	}
	p.Set("other", ProfileSettings{}, false)
	if p.ShouldProfile("other", time.Hour) {
		t.Fatal("off everywhere again")
	}
}

func TestBeginKeepsTheStartGivenAndEndAtTheEnd(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewManual(t0)
	r := NewRegistry(clk)
	id := r.Begin(Op{Desc: "conn1", Client: "127.0.0.1:5000", Started: t0.Add(-time.Second)})
	if ops := r.Snapshot(); len(ops) != 1 || !ops[0].Started.Equal(t0.Add(-time.Second)) {
		t.Fatalf("the start the caller read is kept: %+v", ops)
	}
	clk.Advance(time.Minute)
	r.EndAt(id, t0.Add(30*time.Second)) // the caller's reading, not the clock's
	if len(r.Snapshot()) != 0 {
		t.Fatal("ended")
	}
	if !r.BusyWithin(31*time.Second) || r.BusyWithin(29*time.Second) {
		t.Fatal("a client's operation ended at the time EndAt was given")
	}
}
