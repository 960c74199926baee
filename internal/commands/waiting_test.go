package commands

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/server"
)

// A change stream's getMore waiting for the next change shows in
// currentOp but does not count as a client at work, so an idle stream
// does not hold the TTL monitor to its pace; it counts again once the
// change arrives.
func TestStreamGetMoreWaitingIsNotBusy(t *testing.T) {
	h := newStreamHandler(t)
	c := server.NewDetachedConn(1, "127.0.0.1:50000")
	open := runOn(h, c, "test", watchCmd("c", bson.D{}, 0))
	id := cursorField(t, open, "id").(int64)
	got := make(chan bson.D, 1)
	go func() {
		got <- runOn(h, c, "test", bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "maxTimeMS", Value: int64(5000)}})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(h.deps.Activity.Snapshot()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the getMore never showed in currentOp")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // into its wait
	if n := h.deps.Activity.Active(); n != 0 {
		t.Fatalf("Active() = %d while the stream's getMore waits, want 0", n)
	}
	if ops := h.deps.Activity.Snapshot(); len(ops) != 1 || ops[0].Kind != "getmore" {
		t.Fatalf("currentOp while waiting: %+v", ops)
	}
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}})
	select {
	case reply := <-got:
		if n := len(cursorField(t, reply, "nextBatch").(bson.A)); n != 1 {
			t.Fatalf("getMore after the insert: %d events, want 1: %v", n, reply)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("the insert did not end the getMore's wait")
	}
	if ops := h.deps.Activity.Snapshot(); len(ops) != 0 {
		t.Fatalf("operations left after the getMore: %+v", ops)
	}
}
