package docstore

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestWarnExpiring: a pass sends one "expiring" event per document whose
// expiry entered the window since the last pass: a document with an
// array of dates once, by its earliest; a touched one at its new time.
func TestWarnExpiring(t *testing.T) {
	s, clk, c := warnedCollection(t)
	if n, err := c.WarnExpiring(clk.Now()); n != 0 || err != nil {
		t.Fatalf("first pass: %d %v", n, err)
	}
	now := clk.Now()
	for i, d := range []any{date(now), bson.A{date(now.Add(50 * time.Second)), date(now)}, date(now)} {
		if err := c.Insert(bson.D{{Key: "_id", Value: int32(i)}, {Key: "at", Value: d}}, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(89 * time.Second) // the window reaches now + 99 s: nothing due
	if n, err := c.WarnExpiring(clk.Now()); n != 0 || err != nil {
		t.Fatalf("before the window: %d %v", n, err)
	}
	_, err := c.Modify(int32(2), WriteOptions{}, func(doc bson.D) (Change, error) {
		return Change{Kind: Replace, Doc: bson.D{{Key: "_id", Value: int32(2)}, {Key: "at", Value: date(now.Add(30 * time.Second))}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second) // now + 101 s: 0 and 1 are due
	if n, err := c.WarnExpiring(clk.Now()); n != 2 || err != nil {
		t.Fatalf("due: %d %v", n, err)
	}
	if n, _ := c.WarnExpiring(clk.Now()); n != 0 {
		t.Fatalf("warned again: %d", n)
	}
	clk.Advance(30 * time.Second) // 2's new expiry enters the window
	if n, _ := c.WarnExpiring(clk.Now()); n != 1 {
		t.Fatalf("the touched document: %d", n)
	}
	var got []string
	err = changestream.Scan(s.Engine(), changestream.Position{}, func(rec changestream.Record) (bool, error) {
		if rec.Event.Op == changestream.OpExpiring {
			got = append(got, string(rec.Event.RawID[1:2])+"@"+time.UnixMilli(rec.Event.Expired.AtMillis).Sub(now).String())
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[\x00@1m40s \x01@1m40s \x02@2m10s]"; fmt.Sprint(got) != want {
		t.Fatalf("warnings %q, want %q", fmt.Sprint(got), want)
	}
}

func TestExpiryWarningSecondsNeedsTTL(t *testing.T) {
	_, err := catalog.ParseIndexSpec(bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "x"}, {Key: "expiryWarningSeconds", Value: 10}})
	if mongoerr.As(err).Code != mongoerr.CannotCreateIndex {
		t.Fatalf("without expireAfterSeconds: %v", err)
	}
	_, err = catalog.ParseIndexSpec(bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "x"}, {Key: "expireAfterSeconds", Value: 10}, {Key: "expiryWarningSeconds", Value: 0.5}})
	if mongoerr.As(err).Code != mongoerr.CannotCreateIndex {
		t.Fatalf("half a second: %v", err)
	}
}

// TestWarnExpiringAfterRestart: the first pass after a restart goes on
// from where the warnings had got, so that the warnings that fell due
// while the server was down are sent, late, for the documents that have
// not expired yet, none twice and none for a document already expired;
// a change of expireAfterSeconds starts the window afresh, and a dropped
// index leaves no mark behind.
func TestWarnExpiringAfterRestart(t *testing.T) {
	s, clk, c := warnedCollection(t)
	start := clk.Now()
	if n, err := c.WarnExpiring(start); n != 0 || err != nil { // opens the window
		t.Fatalf("first pass: %d %v", n, err)
	}
	for i, after := range []time.Duration{0, 5 * time.Second, 20 * time.Second, 40 * time.Second} {
		if err := c.Insert(bson.D{{Key: "_id", Value: int32(i)}, {Key: "at", Value: date(start.Add(after))}}, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(91 * time.Second) // 0 is due (expires at 100 s)
	if n, err := c.WarnExpiring(clk.Now()); n != 1 || err != nil {
		t.Fatalf("before the restart: %d %v", n, err)
	}
	// Down from 91 s to 112 s: 1 (due 95 s) expired at 105 s, 2 (due 110 s)
	// expires at 120 s and was never warned; 3 is due at 130 s.
	clk.Advance(21 * time.Second)
	reopened := reopenStore(t, s, clk)
	c = reopened.Collection("db", "s")
	if n, err := c.WarnExpiring(clk.Now()); n != 1 || err != nil {
		t.Fatalf("first pass after the restart: %d %v", n, err)
	}
	clk.Advance(20 * time.Second)
	if n, _ := c.WarnExpiring(clk.Now()); n != 1 {
		t.Fatalf("3 when due: %d", n)
	}
	if got, want := warningsSent(t, reopened, start), "[\x00@1m40s \x02@2m0s \x03@2m20s]"; got != want {
		t.Fatalf("warnings %q, want %q", got, want)
	}

	if err := c.ModifyIndex("at_1", func(ix *catalog.Index) error { ix.ExpireAfter = 200; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.storedWarnedTo(c.state.Load().ttl[0]); ok {
		t.Fatal("a mark from before expireAfterSeconds changed was taken")
	}
	if err := c.DropIndex("at_1"); err != nil {
		t.Fatal(err)
	}
	it, err := reopened.Engine().NewIter([]byte{tagWarned}, []byte{tagWarned + 1})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.First() {
		t.Fatalf("a mark outlived its index: %x", it.Key())
	}
}

// reopenStore opens the store's engine again, as a restart does: every
// collection's memory starts afresh.
func reopenStore(t *testing.T, s *Store, clk *clock.Manual) *Store {
	t.Helper()
	again, err := Open(s.Engine(), Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return again
}

// warningsSent lists the "expiring" events in the log as _id@expiry
// after start.
func warningsSent(t *testing.T, s *Store, start time.Time) string {
	t.Helper()
	var got []string
	err := changestream.Scan(s.Engine(), changestream.Position{}, func(rec changestream.Record) (bool, error) {
		if rec.Event.Op == changestream.OpExpiring {
			got = append(got, string(rec.Event.RawID[1:2])+"@"+time.UnixMilli(rec.Event.Expired.AtMillis).Sub(start).String())
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(got)
}

// TestWarnExpiringLeadTimeChanged: a longer expiryWarningSeconds warns at
// once of the documents its window now takes in and later ones on time;
// warnings turned off and on again start as a new index's do.
func TestWarnExpiringLeadTimeChanged(t *testing.T) {
	s, clk, c := warnedCollection(t)
	start := clk.Now()
	setLead := func(secs int64) {
		t.Helper()
		if err := c.ModifyIndex("at_1", func(ix *catalog.Index) error { ix.WarnBefore = secs; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	pass := func(want int) {
		t.Helper()
		if n, err := c.WarnExpiring(clk.Now()); n != want || err != nil {
			t.Fatalf("at %v: %d warnings, %v; want %d", clk.Now().Sub(start), n, err, want)
		}
	}
	pass(0) // opens the window
	for i, after := range []time.Duration{0, 30 * time.Second, 60 * time.Second} {
		if err := c.Insert(bson.D{{Key: "_id", Value: int32(i)}, {Key: "at", Value: date(start.Add(after))}}, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(85 * time.Second)
	pass(0) // window up to 95 s
	setLead(30)
	pass(1) // up to 115 s: 0 (expires at 100 s) at once
	clk.Advance(16 * time.Second)
	pass(1) // 131 s: 1
	setLead(0)
	pass(0)
	clk.Advance(34 * time.Second)
	setLead(30)
	pass(0) // 135 s: 2 (expires at 160 s) is inside the window this opens
	clk.Advance(20 * time.Second)
	pass(0)
	if got, want := warningsSent(t, s, start), "[\x00@1m40s \x01@2m10s]"; got != want {
		t.Fatalf("warnings %q, want %q", got, want)
	}
}

// TestWarnExpiringWrittenInsideTheWindow: a document written (or touched)
// to expire within the window the passes have gone past is warned of by
// the write, after its write event; one written already expired, or
// rewritten without a new expiry, is not.
func TestWarnExpiringWrittenInsideTheWindow(t *testing.T) {
	s, clk, c := warnedCollection(t)
	start := clk.Now()
	c.WarnExpiring(start)
	clk.Advance(time.Second)
	c.WarnExpiring(clk.Now()) // the window reaches 111 s
	written := map[int32]bool{}
	set := func(id int32, d bson.D) {
		t.Helper()
		doc := append(bson.D{{Key: "_id", Value: id}}, d...)
		var err error
		if written[id] {
			_, err = c.Modify(id, WriteOptions{}, func(bson.D) (Change, error) { return Change{Kind: Replace, Doc: doc}, nil })
		} else {
			err = c.Insert(doc, WriteOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		written[id] = true
	}
	set(0, bson.D{{Key: "at", Value: date(start.Add(-94 * time.Second))}})  // expires at 6 s
	set(1, bson.D{{Key: "at", Value: date(start.Add(-150 * time.Second))}}) // expired
	set(2, bson.D{{Key: "at", Value: date(start)}})                         // expires at 100 s: the passes'
	set(0, bson.D{{Key: "at", Value: date(start.Add(-94 * time.Second))}, {Key: "n", Value: 1}})
	set(0, bson.D{{Key: "at", Value: date(start.Add(-92 * time.Second))}}) // touched: 8 s
	clk.Advance(89 * time.Second)
	if n, _ := c.WarnExpiring(clk.Now()); n != 1 {
		t.Fatalf("2 when due: %d", n)
	}
	if got, want := warningsSent(t, s, start), "[\x00@6s \x00@8s \x02@1m40s]"; got != want {
		t.Fatalf("warnings %q, want %q", got, want)
	}
	var ops []string
	err := changestream.Scan(s.Engine(), changestream.Position{}, func(rec changestream.Record) (bool, error) {
		id := rec.Event.RawID
		if len(id) == 0 && len(rec.Event.Doc) > 0 {
			id = append([]byte{byte(bson.TypeInt32)}, bson.Raw(rec.Event.Doc).Lookup("_id").Value...)
		}
		if len(id) > 1 && id[1] == 0 {
			ops = append(ops, rec.Event.Op.String())
		}
		return true, nil
	})
	if err != nil || fmt.Sprint(ops) != "[insert expiring update update expiring]" {
		t.Fatalf("events of 0: %v %v", ops, err)
	}
}

// TestWarnExpiringRacingWrites: writers putting documents whose expiry is
// just inside or just outside the window while passes run and the clock
// moves on with the writes (2 ms a document, so that none has expired by
// the time it commits): every document is warned of exactly once, by its
// write or by a pass.
func TestWarnExpiringRacingWrites(t *testing.T) {
	s, clk, c := warnedCollection(t)
	start := clk.Now()
	if _, err := c.WarnExpiring(start); err != nil {
		t.Fatal(err)
	}
	const writers, each = 4, 300
	var wg sync.WaitGroup
	var written atomic.Int64
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range each {
				// Expires 8–12 s from now: inside the window or just past it.
				at := clk.Now().Add(-90*time.Second - time.Duration(rng.IntN(4000))*time.Millisecond)
				if err := c.Insert(bson.D{{Key: "_id", Value: int32(w*each + i)}, {Key: "at", Value: date(at)}}, WriteOptions{}); err != nil {
					t.Error(err)
					return
				}
				written.Add(1)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for moved := time.Duration(0); ; {
		select {
		case <-done:
		default:
			if step := time.Duration(written.Load())*2*time.Millisecond - moved; step > 0 {
				clk.Advance(step)
				moved += step
			}
			if _, err := c.WarnExpiring(clk.Now()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		break
	}
	clk.Advance(5 * time.Second) // every document's expiry inside the window
	if _, err := c.WarnExpiring(clk.Now()); err != nil {
		t.Fatal(err)
	}
	seen := warningsPerID(t, s)
	for id := range int32(writers * each) {
		if seen[id] != 1 {
			doc, _ := c.loadLocked(keyenc.AppendValue(nil, id))
			t.Fatalf("document %d (%v; now %v, start %v) warned of %d times (of %d documents, %d warned)", id, doc, clk.Now(), start, seen[id], writers*each, len(seen))
		}
	}
}

// TestWarnExpiringWaitsForAHeldDocument: a pass stops before a document
// whose lock a write holds and sends its warning at the next pass, and
// none twice, also when documents of the same millisecond came before it.
func TestWarnExpiringWaitsForAHeldDocument(t *testing.T) {
	s, clk, c := warnedCollection(t)
	start := clk.Now()
	if _, err := c.WarnExpiring(start); err != nil {
		t.Fatal(err)
	}
	for i := range int32(20) { // all expire at 100 s
		if err := c.Insert(bson.D{{Key: "_id", Value: i}, {Key: "at", Value: date(start)}}, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(91 * time.Second)
	held := &lockSet{c: c}
	held.lockStripe(c.stripeOf(keyenc.AppendValue(nil, int32(7))))
	if n, err := c.WarnExpiring(clk.Now()); err != nil || n == 20 {
		t.Fatalf("with 7 held: %d warnings, %v", n, err)
	}
	held.release()
	clk.Advance(10 * time.Millisecond)
	if _, err := c.WarnExpiring(clk.Now()); err != nil {
		t.Fatal(err)
	}
	seen := warningsPerID(t, s)
	for id := range int32(20) {
		if seen[id] != 1 {
			t.Fatalf("document %d warned of %d times: %v", id, seen[id], seen)
		}
	}
}

// warnedCollection is a store and its clock with a collection whose TTL
// index at_1 expires documents 100 s after their date and warns of them
// 10 s before.
func warnedCollection(t *testing.T) (*Store, *clock.Manual, *Collection) {
	t.Helper()
	s, clk := openStore(t)
	c, _ := s.CreateCollection("db", "s", CreateOptions{})
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "at_1"},
		{Key: "expireAfterSeconds", Value: 100}, {Key: "expiryWarningSeconds", Value: 10}})
	return s, clk, c
}

// warningsPerID counts the "expiring" events in the log by their int32
// _id.
func warningsPerID(t *testing.T, s *Store) map[int32]int {
	t.Helper()
	seen := map[int32]int{}
	err := changestream.Scan(s.Engine(), changestream.Position{}, func(rec changestream.Record) (bool, error) {
		if rec.Event.Op == changestream.OpExpiring {
			seen[int32(binary.LittleEndian.Uint32(rec.Event.RawID[1:]))]++
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return seen
}
