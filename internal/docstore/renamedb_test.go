package docstore

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

var tmpRenameName = regexp.MustCompile(`^tmp[a-zA-Z0-9]{5}\.renameCollection$`)

// checkCrossDBEvents checks the events of renaming db1.src (its UUID
// srcUUID, n documents, index x_1) to db2.dst over the collection
// dstUUID (nil: none), as mongod 8.0 writes them: the copy's create,
// createIndexes and inserts under a temporary name of db2, its rename to
// db2.dst, the source's drop. uuid is the renamed collection's new UUID.
func checkCrossDBEvents(evs []*changestream.Event, n int, srcUUID, dstUUID, uuid []byte) error {
	if len(evs) != n+4 {
		return fmt.Errorf("%d events %v, want %d", len(evs), ops(evs), n+4)
	}
	tmp := evs[0].Coll
	if !tmpRenameName.MatchString(tmp) {
		return fmt.Errorf("temporary name %q", tmp)
	}
	want := []changestream.Op{changestream.OpCreate, changestream.OpCreateIndexes}
	for i := 0; i < n; i++ {
		want = append(want, changestream.OpInsert)
	}
	want = append(want, changestream.OpRename, changestream.OpDrop)
	for i, ev := range evs {
		ns, id := "db2."+tmp, uuid
		if ev.Op == changestream.OpDrop {
			ns, id = "db1.src", srcUUID
		}
		if ev.Op != want[i] || ev.DB+"."+ev.Coll != ns || string(ev.UUID) != string(id) {
			return fmt.Errorf("event %d: %v on %s.%s (uuid %x), want %v on %s (uuid %x)", i, ev.Op, ev.DB, ev.Coll, ev.UUID, want[i], ns, id)
		}
	}
	var desc struct {
		Indexes []struct{ Name string } `bson:"indexes"`
	}
	if err := bson.Unmarshal(evs[1].Desc, &desc); err != nil || len(desc.Indexes) != 1 || desc.Indexes[0].Name != "x_1" {
		return fmt.Errorf("createIndexes %v %v", desc, err)
	}
	if evs[2].Doc == nil {
		return fmt.Errorf("insert without its document")
	}
	rn := evs[n+2]
	var rdesc struct {
		To struct {
			DB   string `bson:"db"`
			Coll string `bson:"coll"`
		} `bson:"to"`
		DropTarget *bson.Binary `bson:"dropTarget"`
	}
	if err := bson.Unmarshal(rn.Desc, &rdesc); err != nil {
		return err
	}
	if rn.ToDB != "db2" || rn.ToColl != "dst" || rdesc.To.DB != "db2" || rdesc.To.Coll != "dst" {
		return fmt.Errorf("rename to %s.%s, desc %+v", rn.ToDB, rn.ToColl, rdesc)
	}
	if (rdesc.DropTarget == nil) != (dstUUID == nil) || (dstUUID != nil && string(rdesc.DropTarget.Data) != string(dstUUID)) {
		return fmt.Errorf("dropTarget %v, want %x", rdesc.DropTarget, dstUUID)
	}
	return nil
}

// TestRenameAcrossDatabasesWritesCopyEvents: mongod 8.0 reports a rename
// across databases as its copy; before, Mayfly wrote one rename from the
// source, kept the UUID, and the source's streams saw no drop.
func TestRenameAcrossDatabasesWritesCopyEvents(t *testing.T) {
	for _, dropTarget := range []bool{false, true} {
		t.Run(fmt.Sprint("dropTarget=", dropTarget), func(t *testing.T) {
			s, records := loggedStore(t)
			src, err := s.CreateCollection("db1", "src", CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			insertN(t, src, 3)
			mustIndex(t, src, bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: "x_1"}})
			var dstUUID []byte
			if dropTarget {
				dst, err := s.CreateCollection("db2", "dst", CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				insertN(t, dst, 2)
				dstUUID = dst.Meta().UUID.Data
			}
			srcUUID := src.Meta().UUID.Data
			records()
			if err := s.RenameCollection("db1", "src", "db2", "dst", dropTarget); err != nil {
				t.Fatal(err)
			}
			got := s.Collection("db2", "dst")
			if got == nil || got.Count() != 3 || s.Collection("db1", "src") != nil || len(got.Indexes()) != 2 {
				t.Fatalf("after the rename: %v", got)
			}
			uuid := got.Meta().UUID.Data
			if string(uuid) == string(srcUUID) {
				t.Fatal("the renamed collection kept its UUID; mongod's copy has a new one")
			}
			var evs []*changestream.Event
			for _, r := range records() {
				evs = append(evs, r.Event)
			}
			if err := checkCrossDBEvents(evs, 3, srcUUID, dstUUID, uuid); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCrashRenameAcrossDatabases: the copy's events, the rename and the
// source's drop are one write with the catalog change.
func TestCrashRenameAcrossDatabases(t *testing.T) {
	var srcUUID, dstUUID []byte
	runCrashes(t, crashCase{
		setup: func(t *testing.T, s *Store) {
			src, err := s.CreateCollection("db1", "src", CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			insertN(t, src, 4)
			mustIndex(t, src, bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: "x_1"}})
			dst, err := s.CreateCollection("db2", "dst", CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			insertN(t, dst, 2)
			srcUUID, dstUUID = src.Meta().UUID.Data, dst.Meta().UUID.Data
		},
		op: func(s *Store) error { return s.RenameCollection("db1", "src", "db2", "dst", true) },
		check: func(s *Store, evs []*changestream.Event) error {
			src, dst := s.Collection("db1", "src"), s.Collection("db2", "dst")
			switch {
			case src != nil && dst != nil && string(dst.Meta().UUID.Data) == string(dstUUID):
				if len(evs) != 0 {
					return fmt.Errorf("nothing renamed, yet events %v", ops(evs))
				}
				return nil
			case src == nil && dst != nil && dst.Count() == 4:
				return checkCrossDBEvents(evs, 4, srcUUID, dstUUID, dst.Meta().UUID.Data)
			}
			return fmt.Errorf("src there %v, dst there %v, events %v", src != nil, dst != nil, ops(evs))
		},
	})
}

// TestRenameViewRefused: mongod renames collections only
// (jstests/core/ddl/rename_collection_view.js): a view as the source
// answers CommandNotSupportedOnView whatever the target, a view as the
// target NamespaceExists even with dropTarget. Before, Mayfly moved a
// view, or dropped one with dropTarget, and across databases would have
// reported a view as a copied collection.
func TestRenameViewRefused(t *testing.T) {
	s, _ := openStore(t)
	view := bson.D{{Key: "viewOn", Value: "c"}, {Key: "pipeline", Value: bson.A{}}}
	for _, ns := range [][2]string{{"db1", "v"}, {"db2", "v"}} {
		if _, err := s.CreateCollection(ns[0], ns[1], CreateOptions{Raw: view}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.CreateCollection("db1", "c", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	insertN(t, c, 2)
	for _, tc := range []struct {
		fromDB, from, toDB, to string
		code                   mongoerr.Code
		msg                    string
	}{
		{"db1", "v", "db1", "w", mongoerr.CommandNotSupportedOnView, "cannot rename view: db1.v"},
		{"db1", "v", "db2", "w", mongoerr.CommandNotSupportedOnView, "cannot rename view: db1.v"},
		{"db1", "v", "db1", "c", mongoerr.CommandNotSupportedOnView, "cannot rename view: db1.v"},
		{"db1", "c", "db1", "v", mongoerr.NamespaceExists, "a view already exists with that name: db1.v"},
		{"db1", "c", "db2", "v", mongoerr.NamespaceExists, "a view already exists with that name: db2.v"},
		{"db1", "gone", "db1", "c", mongoerr.NamespaceNotFound, "source namespace does not exist"},
	} {
		for _, dropTarget := range []bool{false, true} {
			err := s.RenameCollection(tc.fromDB, tc.from, tc.toDB, tc.to, dropTarget)
			if e := mongoerr.As(err); e == nil || e.Code != tc.code || e.Msg != tc.msg {
				t.Fatalf("%s.%s to %s.%s, dropTarget %v: %v", tc.fromDB, tc.from, tc.toDB, tc.to, dropTarget, err)
			}
		}
	}
	for _, ns := range [][2]string{{"db1", "v"}, {"db2", "v"}, {"db1", "c"}} {
		if s.Collection(ns[0], ns[1]) == nil {
			t.Fatalf("%s.%s is gone", ns[0], ns[1])
		}
	}
}

// TestRenameAcrossDatabasesLargeCollection: a collection over
// copyEventsLimit is not copied into the rename's one write; its rename
// is one rename event from the source, and it keeps its UUID.
func TestRenameAcrossDatabasesLargeCollection(t *testing.T) {
	s, records := loggedStore(t)
	src, err := s.CreateCollection("db1", "src", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 1<<20)
	n := copyEventsLimit/(1<<20) + 1
	for i := 0; i < n; i++ {
		if err := src.Insert(bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}}, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	srcUUID := src.Meta().UUID.Data
	records()
	if err := s.RenameCollection("db1", "src", "db2", "dst", false); err != nil {
		t.Fatal(err)
	}
	got := s.Collection("db2", "dst")
	if got == nil || got.Count() != int64(n) || string(got.Meta().UUID.Data) != string(srcUUID) {
		t.Fatalf("after the rename: %v", got)
	}
	recs := records()
	if len(recs) != 1 {
		t.Fatalf("%d events, want the one rename", len(recs))
	}
	ev := recs[0].Event
	if ev.Op != changestream.OpRename || ev.DB != "db1" || ev.Coll != "src" || ev.ToDB != "db2" || ev.ToColl != "dst" {
		t.Fatalf("event %v %s.%s → %s.%s", ev.Op, ev.DB, ev.Coll, ev.ToDB, ev.ToColl)
	}
}
