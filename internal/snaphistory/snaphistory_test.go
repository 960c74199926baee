package snaphistory

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/docstore/docstoretest"
)

func openTxnStore(t *testing.T) (*docstore.Store, *docstore.Collection) {
	t.Helper()
	s := docstoretest.Open(t)
	c, err := s.CreateCollection("db", "c", docstore.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func insert(t *testing.T, c *docstore.Collection, doc bson.D) {
	t.Helper()
	d, err := docstore.PrepareInsert(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Insert(d, docstore.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// scanIDs is the _ids x reads in c.
func scanIDs(t *testing.T, x *docstore.Txn, c *docstore.Collection) []string {
	t.Helper()
	it := x.Scan(c, nil, nil)
	defer it.Close()
	var ids []string
	for {
		d, ok, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return ids
		}
		ids = append(ids, fmt.Sprint(d[0].Value))
	}
}

// appliedAt is a fake applied cluster time, moved by the test.
type appliedAt struct{ ts uint64 }

func (a *appliedAt) now() uint64 { return a.ts }

func TestSnapshotHistoryReadsAtItsTime(t *testing.T) {
	s, c := openTxnStore(t)
	clk := clock.NewManual(time.Unix(1000, 0))
	h := New(s, clk)
	defer h.Close()
	applied := &appliedAt{ts: 10}
	insert(t, c, bson.D{{Key: "_id", Value: 1}})
	first, ts, err := h.Latest(applied.now)
	if err != nil || ts != 10 {
		t.Fatalf("Latest: ts %d, %v; want 10", ts, err)
	}
	insert(t, c, bson.D{{Key: "_id", Value: 2}})
	applied.ts = 11
	again, ok := h.At(10)
	if !ok {
		t.Fatal("the snapshot at 10 is not held")
	}
	for _, x := range []*docstore.Txn{first, again} {
		if got := scanIDs(t, x, c); !slices.Equal(got, []string{"1"}) {
			t.Fatalf("at 10: %v, want [1]", got)
		}
	}
	latest, ts, err := h.Latest(applied.now)
	if err != nil || ts != 11 {
		t.Fatalf("Latest after a write: ts %d, %v; want 11", ts, err)
	}
	if got := scanIDs(t, latest, c); !slices.Equal(got, []string{"1", "2"}) {
		t.Fatalf("at 11: %v, want [1 2]", got)
	}
	if _, _, err := h.Latest(applied.now); err != nil || h.Held() != 2 {
		t.Fatalf("Latest at a held time took another snapshot: %d held, %v", h.Held(), err)
	}
	if _, ok := h.At(9); ok {
		t.Fatal("a time no read asked for is held")
	}
}

func TestSnapshotHistoryWindow(t *testing.T) {
	s, c := openTxnStore(t)
	clk := clock.NewManual(time.Unix(1000, 0))
	h := New(s, clk)
	defer h.Close()
	if h.Window() != 300*time.Second {
		t.Fatalf("window %v, want mongod's 300 s", h.Window())
	}
	h.SetWindow(5 * time.Second)
	insert(t, c, bson.D{{Key: "_id", Value: 1}})
	x, _, err := h.Latest((&appliedAt{ts: 7}).now)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(4 * time.Second)
	if _, ok := h.At(7); !ok {
		t.Fatal("released inside the window")
	}
	clk.Advance(2 * time.Second)
	if _, ok := h.At(7); ok {
		t.Fatal("held past the window")
	}
	_, _, err = x.Scan(c, nil, nil).Next()
	if !errors.Is(err, ErrSnapshotReleased) {
		t.Fatalf("a read of a released snapshot: %v, want ErrSnapshotReleased", err)
	}
}

func TestSnapshotHistoryBounds(t *testing.T) {
	s, _ := openTxnStore(t)
	h := New(s, clock.NewManual(time.Unix(1000, 0)))
	defer h.Close()
	moving := uint64(0)
	if _, _, err := h.Latest(func() uint64 { moving++; return moving }); !errors.Is(err, ErrSnapshotBusy) {
		t.Fatalf("a time that never holds still: %v, want ErrSnapshotBusy", err)
	}
	for ts := range uint64(maxHeldSnapshots + 10) {
		if _, _, err := h.Latest(func() uint64 { return ts }); err != nil {
			t.Fatal(err)
		}
	}
	if h.Held() != maxHeldSnapshots {
		t.Fatalf("%d held, want at most %d", h.Held(), maxHeldSnapshots)
	}
	if _, ok := h.At(0); ok {
		t.Fatal("the oldest snapshot was kept past the bound")
	}
}
