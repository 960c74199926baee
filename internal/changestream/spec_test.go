package changestream

import "testing"

// TestExpandedEventsReachOnlyExpandedStreams: the DDL events go to
// streams with showExpandedEvents only, and a view's or a time-series
// collection's (from system.views on mongod), its drop included, to
// their database and cluster streams with the option only, not to a
// stream on a collection of the same name. A rename reaches the streams
// of its source and of its target.
func TestExpandedEventsReachOnlyExpandedStreams(t *testing.T) {
	create := &Event{Op: OpCreate, DB: "d", Coll: "c", NsType: NsCollection}
	view := &Event{Op: OpCreate, DB: "d", Coll: "c", NsType: NsView}
	viewDrop := &Event{Op: OpDrop, DB: "d", Coll: "c", NsType: NsView}
	tsDrop := &Event{Op: OpDrop, DB: "d", Coll: "c", NsType: NsTimeseries}
	insert := &Event{Op: OpInsert, DB: "d", Coll: "c"}
	renameTo := &Event{Op: OpRename, DB: "d", Coll: "a", ToDB: "d", ToColl: "c"}
	renameIn := &Event{Op: OpRename, DB: "e", Coll: "a", ToDB: "d", ToColl: "c"}
	coll, db, other := Scope{DB: "d", Coll: "c"}, Scope{DB: "d"}, Scope{DB: "d", Coll: "x"}
	cases := []struct {
		ev       *Event
		scope    Scope
		expanded bool
		want     bool
	}{
		{create, coll, false, false}, {create, coll, true, true}, {create, db, true, true},
		{view, coll, true, false}, {view, db, true, true}, {view, db, false, false},
		{viewDrop, coll, true, false}, {viewDrop, db, true, true}, {viewDrop, coll, false, false},
		{viewDrop, db, false, false}, {tsDrop, db, false, false}, {tsDrop, db, true, true},
		{insert, coll, false, true}, {insert, coll, true, true},
		{renameTo, coll, false, true}, {renameTo, other, false, false}, {renameIn, coll, false, true},
		{renameIn, db, false, true}, {renameIn, Scope{DB: "e"}, false, true},
	}
	for i, c := range cases {
		s := &Spec{Scope: c.scope, Expanded: c.expanded}
		if got := s.covers(c.ev); got != c.want {
			t.Errorf("case %d: %v %+v expanded=%v: covers = %v", i, c.ev.Op, c.scope, c.expanded, got)
		}
	}
}
