package docstore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// A DDL change and the change stream event that reports it must survive a
// crash together: these tests let a command's writes commit up to the
// k-th, fail every one after it (a crash there: nothing later reaches
// storage), open the store again over what was written, and check that
// the change and its event are both there or both absent, for every k.

var errCrash = errors.New("crash injected by the test")

// quiet drops the warnings of the reopened stores (unfinished builds).
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// crashEngine commits the first left batches and fails every later one;
// left < 0 never fails. Its batches carry events like the engine under it.
type crashEngine struct {
	storage.Engine
	left atomic.Int64
}

func (e *crashEngine) NewBatch() storage.Batch {
	return &crashBatch{Batch: e.Engine.NewBatch(), e: e}
}

type crashBatch struct {
	storage.Batch
	e *crashEngine
}

func (b *crashBatch) Commit(sync bool) error {
	if b.e.left.Load() == 0 {
		return errCrash
	}
	b.e.left.Add(-1)
	return b.Batch.Commit(sync)
}

func (b *crashBatch) AddEvent(ev []byte) { b.Batch.(changestream.EventBatch).AddEvent(ev) }

func (b *crashBatch) RecordsEvents() bool {
	eb, ok := b.Batch.(changestream.EventBatch)
	return ok && eb.RecordsEvents()
}

// openLogged opens a store with its change log on over base.
func openLogged(t *testing.T, base storage.Engine) (*Store, *changestream.Engine) {
	t.Helper()
	clk := clock.NewManual(t0)
	logged, err := changestream.NewEngine(base, clk, changestream.NewSignal())
	if err == nil {
		err = logged.Record()
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(logged, Options{Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return s, logged
}

// crashCase is one DDL command under test: setup makes what it works on
// (every write commits), op runs it, check looks at the reopened store
// and the events after setup's.
type crashCase struct {
	setup func(t *testing.T, s *Store)
	op    func(s *Store) error
	check func(s *Store, evs []*changestream.Event) error
}

// runCrashes runs c with a crash after each number of committed writes,
// until op completes without one.
func runCrashes(t *testing.T, c crashCase) {
	t.Helper()
	for k := int64(0); k < 50; k++ {
		base, err := pebblestore.Open(pebblestore.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		defer base.Close()
		eng := &crashEngine{}
		eng.left.Store(-1)
		logged, err := changestream.NewEngine(base, clock.NewManual(t0), changestream.NewSignal())
		if err == nil {
			err = logged.Record()
		}
		if err != nil {
			t.Fatal(err)
		}
		eng.Engine = logged
		s, err := Open(eng, Options{Clock: clock.NewManual(t0), Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		c.setup(t, s)
		mark, err := changestream.LastTimestamp(base)
		if err != nil {
			t.Fatal(err)
		}
		eng.left.Store(k)
		opErr := c.op(s)
		if opErr != nil && !errors.Is(opErr, errCrash) {
			t.Fatalf("crash after %d writes: %v", k, opErr)
		}
		reopened, _ := openLogged(t, base)
		var evs []*changestream.Event
		err = changestream.Scan(base, changestream.Position{TS: mark, Index: ^uint32(0)}, func(r changestream.Record) (bool, error) {
			evs = append(evs, r.Event)
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.check(reopened, evs); err != nil {
			t.Fatalf("crash after %d writes: %v", k, err)
		}
		if opErr == nil {
			if k == 0 {
				t.Fatal("the command wrote nothing")
			}
			return
		}
	}
	t.Fatal("the command never completed")
}

// ops counts the events of each operation.
func ops(evs []*changestream.Event) map[changestream.Op]int {
	n := map[changestream.Op]int{}
	for _, ev := range evs {
		n[ev.Op]++
	}
	return n
}

func insertN(t *testing.T, c *Collection, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 3}, {Key: "b", Value: i}})
	}
}

func TestCrashCollModKeepsEventWithChange(t *testing.T) {
	validator := bson.D{{Key: "validator", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$exists", Value: true}}}}}}
	runCrashes(t, crashCase{
		setup: func(t *testing.T, s *Store) {
			c, err := s.CreateCollection("db", "c", CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			insertN(t, c, 10)
			mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 60}})
		},
		op: func(s *Store) error {
			e := s.Collection("db", "c").Edit()
			defer e.Close()
			e.SetOptions(validator)
			if err := e.ModifyIndex("t_1", func(ix *catalog.Index) error {
				ix.ExpireAfter = 120
				return nil
			}); err != nil {
				return err
			}
			return e.Commit(&Modify{Desc: bson.D{{Key: "validator", Value: validator[0].Value}}, Before: bson.D{}})
		},
		check: func(s *Store, evs []*changestream.Event) error {
			m := s.Collection("db", "c").Meta()
			validated := len(m.Options) > 0
			ttl := m.Index("t_1").ExpireAfter == 120
			events := ops(evs)[changestream.OpModify]
			if validated != ttl || (events == 1) != ttl || events > 1 {
				return fmt.Errorf("validator set %v, TTL changed %v, %d modify events", validated, ttl, events)
			}
			return nil
		},
	})
}

func TestCrashIndexBuildKeepsEventWithIndexes(t *testing.T) {
	runCrashes(t, crashCase{
		setup: func(t *testing.T, s *Store) {
			c, err := s.CreateCollection("db", "c", CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			insertN(t, c, 10)
		},
		op: func(s *Store) error {
			var ixs []*catalog.Index
			for _, f := range []string{"a", "b"} {
				ix, err := catalog.ParseIndexSpec(bson.D{{Key: "key", Value: bson.D{{Key: f, Value: 1}}}, {Key: "name", Value: f + "_1"}})
				if err != nil {
					return err
				}
				ixs = append(ixs, ix)
			}
			_, err := s.Collection("db", "c").CreateIndexes(ixs)
			return err
		},
		check: func(s *Store, evs []*changestream.Event) error {
			c := s.Collection("db", "c")
			built := len(c.Indexes()) - 1
			var listed int
			for _, ev := range evs {
				if ev.Op == changestream.OpCreateIndexes {
					var desc struct{ Indexes []bson.Raw }
					if err := bson.Unmarshal(ev.Desc, &desc); err != nil {
						return err
					}
					listed += len(desc.Indexes)
				}
			}
			if built != listed || ops(evs)[changestream.OpCreateIndexes] > 1 || (built != 0 && built != 2) {
				return fmt.Errorf("%d indexes built, %d reported in %d events", built, listed, ops(evs)[changestream.OpCreateIndexes])
			}
			for _, ix := range c.Indexes() {
				if !ix.Ready {
					return fmt.Errorf("index %s not ready after the restart", ix.Name)
				}
			}
			return nil
		},
	})
}

func TestCrashDropDatabaseKeepsEventsWithDrops(t *testing.T) {
	runCrashes(t, crashCase{
		setup: func(t *testing.T, s *Store) {
			createFilled(t, s, "db", 5, "a", "b")
			if _, err := s.CreateCollection("other", "c", CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		op: func(s *Store) error { return s.DropDatabase("db") },
		check: func(s *Store, evs []*changestream.Event) error {
			left := len(s.CollectionNames("db"))
			n := ops(evs)
			gone := left == 0
			if s.Collection("other", "c") == nil {
				return fmt.Errorf("another database's collection was dropped")
			}
			if left != 0 && left != 2 || n[changestream.OpDrop] != 2-left || (n[changestream.OpDropDatabase] == 1) != gone || len(evs) != n[changestream.OpDrop]+n[changestream.OpDropDatabase] {
				return fmt.Errorf("%d collections left, events %v", left, n)
			}
			if gone && (evs[0].Op != changestream.OpDrop || evs[2].Op != changestream.OpDropDatabase) {
				return fmt.Errorf("events out of order: %v", evs)
			}
			return nil
		},
	})
}

func TestCrashRenameOverTargetReportsOneRename(t *testing.T) {
	var srcUUID, dstUUID []byte
	runCrashes(t, crashCase{
		setup: func(t *testing.T, s *Store) {
			createFilled(t, s, "db", 5, "src", "dst")
			srcUUID = s.Collection("db", "src").Meta().UUID.Data
			dstUUID = s.Collection("db", "dst").Meta().UUID.Data
		},
		op: func(s *Store) error { return s.RenameCollection("db", "src", "db", "dst", true) },
		check: func(s *Store, evs []*changestream.Event) error {
			src, dst := s.Collection("db", "src"), s.Collection("db", "dst")
			switch {
			case src != nil && dst != nil && string(dst.Meta().UUID.Data) == string(dstUUID):
				if len(evs) != 0 {
					return fmt.Errorf("nothing renamed, yet events %v", ops(evs))
				}
				return nil
			case src == nil && dst != nil && string(dst.Meta().UUID.Data) == string(srcUUID):
				if len(evs) != 1 || evs[0].Op != changestream.OpRename {
					return fmt.Errorf("renamed, events %v", ops(evs))
				}
				var desc struct {
					DropTarget bson.Binary `bson:"dropTarget"`
				}
				if err := bson.Unmarshal(evs[0].Desc, &desc); err != nil {
					return err
				}
				if string(desc.DropTarget.Data) != string(dstUUID) {
					return fmt.Errorf("dropTarget %x, want %x", desc.DropTarget.Data, dstUUID)
				}
				if dst.Count() != 5 {
					return fmt.Errorf("%d documents under the new name", dst.Count())
				}
				return nil
			}
			return fmt.Errorf("src there %v, dst there %v, events %v", src != nil, dst != nil, ops(evs))
		},
	})
}

// TestRenameToItselfKeepsData: mongod refuses it (IllegalOperation)
// before anything else, dropTarget or not; it used to drop the
// collection, then find no source.
func TestRenameToItselfKeepsData(t *testing.T) {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "c", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	insertN(t, c, 3)
	for _, dropTarget := range []bool{false, true} {
		err := s.RenameCollection("db", "c", "db", "c", dropTarget)
		if e := mongoerr.As(err); e == nil || e.Code != mongoerr.IllegalOperation || e.Msg != "Can't rename a collection to itself" {
			t.Fatalf("dropTarget %v: %v", dropTarget, err)
		}
	}
	if got := s.Collection("db", "c"); got == nil || got.Count() != 3 {
		t.Fatalf("collection after the refused renames: %v", got)
	}
}

// createFilled creates the collections names in db, n documents each.
func createFilled(t *testing.T, s *Store, db string, n int, names ...string) {
	t.Helper()
	for _, name := range names {
		c, err := s.CreateCollection(db, name, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		insertN(t, c, n)
	}
}
