package docstore

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// migrateRig is a store whose commits are counted (and can be made to
// fail: crashEngine), over a base engine a test can open again.
type migrateRig struct {
	base *pebblestore.Store
	eng  *crashEngine
	s    *Store
	c    *Collection
}

// commitBudget is what the rig's engine may commit before it fails:
// more than any test here writes.
const commitBudget = 1 << 20

func newMigrateRig(t *testing.T, spec ...bson.D) *migrateRig {
	t.Helper()
	base, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = base.Close() })
	logged, err := changestream.NewEngine(base, clock.NewManual(t0), changestream.NewSignal())
	if err == nil {
		err = logged.Record()
	}
	if err != nil {
		t.Fatal(err)
	}
	eng := &crashEngine{Engine: logged}
	eng.left.Store(commitBudget)
	s, err := Open(eng, Options{Clock: clock.NewManual(t0), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateCollection("db", "m", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "exp", Value: 1}}}, {Key: "name", Value: "exp_1"}, {Key: "expireAfterSeconds", Value: 0}})
	for _, sp := range spec {
		mustIndex(t, c, sp)
	}
	return &migrateRig{base: base, eng: eng, s: s, c: c}
}

// commits is how many batches the rig's engine committed so far.
func (r *migrateRig) commits() int64 { return commitBudget - r.eng.left.Load() }

// eventsSince are the change events recorded after mark.
func (r *migrateRig) eventsSince(t *testing.T, mark changestream.Timestamp) int {
	t.Helper()
	n := 0
	err := changestream.Scan(r.base, changestream.Position{TS: mark, Index: ^uint32(0)}, func(changestream.Record) (bool, error) {
		n++
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (r *migrateRig) mark(t *testing.T) changestream.Timestamp {
	t.Helper()
	mark, err := changestream.LastTimestamp(r.base)
	if err != nil {
		t.Fatal(err)
	}
	return mark
}

// storedK is each stored document's k by _id, expired ones included.
func storedK(t *testing.T, c *Collection) map[int32]string {
	t.Helper()
	out := map[int32]string{}
	err := c.EachStored(func(raw []byte) error {
		var d struct {
			ID int32  `bson:"_id"`
			K  string `bson:"k"`
		}
		if err := bson.Unmarshal(raw, &d); err != nil {
			return err
		}
		out[d.ID] = d.K
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var past = bson.NewDateTimeFromTime(t0.Add(-time.Hour))

// migrateCase is one kind of write a migration batch holds: what is
// stored beforehand (nil: nothing), the batch's document (nil: the _id is
// in deleted) and what must be stored after ("": nothing).
type migrateCase struct {
	name   string
	before bson.D
	put    bson.D
	want   string
}

// migrateCases covers each path of stageMigrated: a put inserts,
// replaces a live or an expired copy, or, expired itself, removes the
// copy in range, leaves one out of range, or stores nothing; a removal
// removes a copy in range, live or expired, leaves one out of range, or
// finds none.
func migrateCases() []migrateCase {
	doc := func(k string, expired bool) bson.D {
		d := bson.D{{Key: "k", Value: k}}
		if expired {
			d = append(d, bson.E{Key: "exp", Value: past})
		}
		return d
	}
	return []migrateCase{
		{name: "put inserts", put: doc("new", false), want: "new"},
		{name: "put replaces live", before: doc("old", false), put: doc("new", false), want: "new"},
		{name: "put replaces expired", before: doc("old", true), put: doc("new", false), want: "new"},
		{name: "expired put removes copy", before: doc("old", false), put: doc("late", true), want: ""},
		{name: "expired put leaves out-of-range copy", before: doc("out", false), put: doc("late", true), want: "out"},
		{name: "expired put stores nothing", put: doc("late", true), want: ""},
		{name: "removal removes live", before: doc("old", false), want: ""},
		{name: "removal removes expired", before: doc("old", true), want: ""},
		{name: "removal leaves out-of-range", before: doc("out", false), want: "out"},
		{name: "removal finds none", want: ""},
	}
}

// inRange is the tests' range: every document but those with k "out".
func inRange(d bson.D) bool {
	for _, e := range d {
		if e.Key == "k" {
			return e.Value != "out"
		}
	}
	return true
}

func withID(id int32, d bson.D) bson.D { return append(bson.D{{Key: "_id", Value: id}}, d...) }

// TestApplyFromMigrateOneWrite: a batch holding every kind of migration
// write commits once, records no change event, and leaves each document
// as its case says, with index entries and counts that validate.
func TestApplyFromMigrateOneWrite(t *testing.T) {
	r := newMigrateRig(t, bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}})
	cases := migrateCases()
	var docs []bson.D
	var deleted []any
	for i, tc := range cases {
		id := int32(i)
		if tc.before != nil {
			insertSynced(t, r.c, withID(id, tc.before))
		}
		if tc.put != nil {
			docs = append(docs, withID(id, tc.put))
		} else {
			deleted = append(deleted, id)
		}
	}
	mark, commits := r.mark(t), r.commits()
	if err := r.c.ApplyFromMigrate(docs, deleted, inRange); err != nil {
		t.Fatal(err)
	}
	if n := r.commits() - commits; n != 1 {
		t.Errorf("%d commits, want the batch's one", n)
	}
	if n := r.eventsSince(t, mark); n != 0 {
		t.Errorf("%d change events, want none from a migration", n)
	}
	stored := storedK(t, r.c)
	for i, tc := range cases {
		if got := stored[int32(i)]; got != tc.want {
			t.Errorf("%s: stored k %q, want %q", tc.name, got, tc.want)
		}
	}
	mustValid(t, r.c)
}

// TestApplyFromMigrateSplits: a batch commits in several writes only where
// one cannot hold it: an _id twice (the second write applies after the
// first), more than migrateBatchBytes, or a collection whose inserts must
// see each other's (a unique index), where each document commits alone.
func TestApplyFromMigrateSplits(t *testing.T) {
	pad := strings.Repeat("p", 100<<10)
	big := func(n int) []bson.D {
		var docs []bson.D
		for i := range n {
			docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: fmt.Sprint(i)}, {Key: "pad", Value: pad}})
		}
		return docs
	}
	small := big(3)
	for _, d := range small {
		d[2].Value = ""
	}
	perBatch := migrateBatchBytes / len(pad)
	cases := []struct {
		name    string
		unique  bool
		docs    []bson.D
		deleted []any
		commits int64
		want    map[int32]string
	}{
		{name: "same _id twice", docs: []bson.D{withID(1, bson.D{{Key: "k", Value: "a"}})}, deleted: []any{int32(1)},
			commits: 2, want: map[int32]string{}},
		{name: "over the byte bound", docs: big(perBatch + 5), commits: 2},
		{name: "unique index", unique: true, docs: small, commits: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var spec []bson.D
			if tc.unique {
				spec = append(spec, bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}, {Key: "unique", Value: true}})
			}
			r := newMigrateRig(t, spec...)
			commits := r.commits()
			if err := r.c.ApplyFromMigrate(tc.docs, tc.deleted, inRange); err != nil {
				t.Fatal(err)
			}
			if n := r.commits() - commits; n != tc.commits {
				t.Errorf("%d commits, want %d", n, tc.commits)
			}
			want := tc.want
			if want == nil {
				want = map[int32]string{}
				for _, d := range tc.docs {
					want[d[0].Value.(int32)] = d[1].Value.(string)
				}
			}
			if got := storedK(t, r.c); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("stored %v, want %v", got, want)
			}
			mustValid(t, r.c)
		})
	}
}

// TestApplyFromMigrateCrash: a batch whose commit fails (a crash there)
// leaves none of its writes, after the store is opened again.
func TestApplyFromMigrateCrash(t *testing.T) {
	r := newMigrateRig(t)
	insertSynced(t, r.c, withID(1, bson.D{{Key: "k", Value: "old"}}), withID(2, bson.D{{Key: "k", Value: "gone"}}))
	before := storedK(t, r.c)
	mark := r.mark(t)
	r.eng.left.Store(0)
	err := r.c.ApplyFromMigrate([]bson.D{withID(1, bson.D{{Key: "k", Value: "new"}}), withID(3, bson.D{{Key: "k", Value: "ins"}})},
		[]any{int32(2)}, inRange)
	if !errors.Is(err, errCrash) {
		t.Fatalf("apply: %v, want the injected crash", err)
	}
	reopened, _ := openLogged(t, r.base)
	c := reopened.Collection("db", "m")
	if got := storedK(t, c); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("after the crash: stored %v, want %v as before the batch", got, before)
	}
	if n := r.eventsSince(t, mark); n != 0 {
		t.Errorf("%d change events after the crash, want none", n)
	}
	mustValid(t, c)
}
