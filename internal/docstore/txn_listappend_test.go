package docstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/txncheck"
	"github.com/mayflydb/mayfly/internal/txnload"
)

// storeListAppend runs list-append transactions on a Store directly: a
// key's list is the document {_id: key, list: [...]}.
type storeListAppend struct{ c *Collection }

func (l storeListAppend) ListAppend(_ context.Context, ops []txncheck.MicroOp) ([]txncheck.MicroOp, error) {
	x := l.c.store.BeginTxn()
	defer x.Abort()
	out := slices.Clone(ops)
	for i, op := range out {
		var err error
		if op.Kind == txncheck.Read {
			out[i].List, err = l.read(x, op.Key)
		} else {
			err = l.append(x, op.Key, op.Value)
		}
		if err != nil {
			// Every failure here is certain: nothing was committed.
			return nil, fmt.Errorf("%w: %w", txnload.ErrAborted, err)
		}
	}
	if err := x.Commit(WriteOptions{}); err != nil {
		return nil, fmt.Errorf("%w: %w", txnload.ErrAborted, err)
	}
	return out, nil
}

func (l storeListAppend) read(x *Txn, key int) ([]int, error) {
	doc, err := x.Modify(l.c, int64(key), func(bson.D) (Change, error) { return Change{Kind: Keep}, nil })
	if err != nil || doc == nil {
		return nil, err
	}
	var list []int
	v, _ := doc[1].Value.(bson.A)
	for _, e := range v {
		list = append(list, int(e.(int64)))
	}
	return list, nil
}

func (l storeListAppend) append(x *Txn, key, value int) error {
	_, err := x.Modify(l.c, int64(key), func(doc bson.D) (Change, error) {
		if doc == nil {
			return Change{Kind: Insert, Doc: bson.D{{Key: "_id", Value: int64(key)}, {Key: "list", Value: bson.A{int64(value)}}}}, nil
		}
		list, _ := doc[1].Value.(bson.A)
		next := bson.D{doc[0], {Key: "list", Value: append(slices.Clone(list), int64(value))}}
		return Change{Kind: Replace, Doc: next}, nil
	})
	return err
}

// TestTxnListAppendIsSnapshotIsolation runs concurrent list-append
// transactions over a few keys against the store and checks the history
// with txncheck: no anomaly snapshot isolation forbids, and the load did
// conflict (else it proved nothing about first-committer-wins).
func TestTxnListAppendIsSnapshotIsolation(t *testing.T) {
	_, c := openTxnStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rec := txnload.NewRecorder[[]txncheck.MicroOp](clock.Real{})
	cfg := txnload.ListAppendConfig{Load: txnload.Load{Clients: 8, Txns: 600, Seed: 7}, Keys: 4, MaxOps: 4}
	if err := txnload.RunListAppend(ctx, cfg, storeListAppend{c}, rec); err != nil {
		t.Fatal(err)
	}
	res, counts, err := txnload.CheckListAppend(rec.Events())
	if err != nil {
		t.Fatal(err)
	}
	ok, aborted := counts[txncheck.Committed], counts[txncheck.Aborted]
	t.Logf("%d transactions: %d committed, %d aborted; anomalies %v", res.Txns, ok, aborted, res.Counts)
	if !res.Valid() {
		t.Fatalf("snapshot isolation broken: %s", res)
	}
	if res.Txns != cfg.Txns || ok == 0 || aborted == 0 {
		t.Fatalf("%d transactions, %d committed, %d aborted: the load must finish and both commit and conflict", res.Txns, ok, aborted)
	}
	mustValid(t, c)
}
