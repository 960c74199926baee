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
