package changestream

import (
	"math"
	"strings"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Scope is what a change stream watches.
type Scope struct {
	DB, Coll string // Coll "": the whole database
	Cluster  bool   // every database (allChangesForCluster)
}

// Spec is a parsed $changeStream stage: what a stream reports and how.
type Spec struct {
	Scope        Scope
	After        Position // the stream starts after it
	Resumed      bool     // a resume option set After
	Token        *Token   // resumeAfter/startAfter, to check it exists
	FullDocument string   // default, updateLookup, whenAvailable, required
	Before       string   // fullDocumentBeforeChange: off, whenAvailable, required
	Expanded     bool     // showExpandedEvents: DDL events and their extra fields
	// Pipeline is the stages after $changeStream and Match (nil: none).
	Pipeline *aggregate.Pipeline
	// Match is a leading $match tested on the change (nil: none):
	// PushDownMatch.
	Match *Filter
}

// covers reports whether the stream reports a change: in its scope, and,
// for a DDL event, asked for with showExpandedEvents. As on mongod, a
// view's or a time-series collection's events (writes to system.views
// there, and the buckets collection's drop, a system one) reach only
// database and cluster streams with showExpandedEvents: a stream
// without the option sees none of them, not even the drop.
func (s *Spec) covers(ev *Event) bool {
	switch {
	case ev.Op.Expanded() && !s.Expanded:
		return false
	case ev.View() && (!s.Expanded || s.Scope.Coll != ""):
		return false
	}
	return s.Scope.covers(ev)
}

// covers reports whether a change belongs to the stream: system
// collections and the internal databases are never reported. A rename
// belongs to the streams of its source and of its target: mongod's
// filter takes a rename whose 'to' is the watched namespace (the target,
// overwritten or new, is renamed into), and a stream on the target
// collection sees the rename, then its invalidate.
func (s Scope) covers(ev *Event) bool {
	if strings.HasPrefix(ev.Coll, "system.") {
		return false
	}
	switch {
	case s.Cluster:
		return ev.DB != "admin" && ev.DB != "config" && ev.DB != "local"
	case s.Coll == "":
		return ev.DB == s.DB || (ev.Op == OpRename && ev.ToDB == s.DB)
	}
	return (ev.DB == s.DB && ev.Coll == s.Coll) ||
		(ev.Op == OpRename && ev.ToDB == s.DB && ev.ToColl == s.Coll)
}

// invalidatedBy reports whether a change the stream covers ends it: the
// drop of a watched collection, a rename from or to it, the drop of a
// watched database.
func (s Scope) invalidatedBy(ev *Event) bool {
	switch {
	case s.Cluster:
		return false
	case s.Coll == "":
		return ev.Op == OpDropDatabase
	}
	return ev.Op == OpDrop || ev.Op == OpRename
}

// JustBefore is the position after which the changes stamped ts or later
// come: where startAtOperationTime starts a stream.
func JustBefore(ts Timestamp) Position {
	switch {
	case ts.I > 0:
		return HighWater(Timestamp{T: ts.T, I: ts.I - 1})
	case ts.T > 0:
		return HighWater(Timestamp{T: ts.T - 1, I: math.MaxUint32})
	}
	return Position{}
}

// CheckResume refuses a resume point the log no longer covers (286) and
// a token whose change is not in the log (280).
func (st *Streams) CheckResume(spec *Spec) error {
	if !spec.Resumed {
		return nil
	}
	trimmed, err := TrimmedTo(st.feed.Reader)
	if err != nil {
		return err
	}
	if trimmed.After(spec.After) {
		return mongoerr.New(mongoerr.ChangeStreamHistoryLost, "Resume of change stream was not possible, as the resume point may no longer be in the oplog.")
	}
	if spec.Token == nil || spec.Token.Pos.Index == math.MaxUint32 {
		return nil
	}
	found, err := Has(st.feed.Reader, spec.Token.Pos)
	if err != nil {
		return err
	}
	if !found {
		return mongoerr.Newf(mongoerr.ChangeStreamFatalError, "cannot resume stream; the resume token was not found. {_data: \"%s\"}", spec.Token.String())
	}
	return nil
}
