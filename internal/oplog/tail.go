package oplog

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/storage"
)

// StartOf is the timestamp a pipeline's leading {$match: {ts: ...}} puts
// every entry after: a tool reading the oplog from a point ($gt, $gte or
// equality with a Timestamp, at the top or inside $and, as mongodump
// asks) reads no more of the log than it needs.
func StartOf(stages bson.A) changestream.Timestamp {
	var first bson.D
	if len(stages) > 0 {
		first, _ = stages[0].(bson.D)
	}
	if len(first) != 1 || first[0].Key != "$match" {
		return changestream.Timestamp{}
	}
	match, _ := first[0].Value.(bson.D)
	return MatchStart(match)
}

// MatchStart is the latest lower bound a filter sets on ts: every entry
// it can pass comes after it.
func MatchStart(match bson.D) changestream.Timestamp {
	var from changestream.Timestamp
	for _, e := range match {
		switch e.Key {
		case "ts":
			from = later(from, tsStart(e.Value))
		case "$and":
			all, _ := e.Value.(bson.A)
			for _, v := range all {
				if d, ok := v.(bson.D); ok {
					from = later(from, MatchStart(d))
				}
			}
		}
	}
	return from
}

// tsStart is the lower bound one condition on ts sets.
func tsStart(cond any) changestream.Timestamp {
	if ts, ok := cond.(bson.Timestamp); ok {
		return previous(changestream.Timestamp{T: ts.T, I: ts.I})
	}
	ops, _ := cond.(bson.D)
	var from changestream.Timestamp
	for _, op := range ops {
		ts, ok := op.Value.(bson.Timestamp)
		switch {
		case !ok:
		case op.Key == "$gt":
			from = later(from, changestream.Timestamp{T: ts.T, I: ts.I})
		case op.Key == "$gte":
			from = later(from, previous(changestream.Timestamp{T: ts.T, I: ts.I}))
		}
	}
	return from
}

// previous is the timestamp right before ts, the zero one for the first.
func previous(ts changestream.Timestamp) changestream.Timestamp {
	if ts.I > 0 {
		return changestream.Timestamp{T: ts.T, I: ts.I - 1}
	}
	if ts.T > 0 {
		return changestream.Timestamp{T: ts.T - 1, I: math.MaxUint32}
	}
	return changestream.Timestamp{}
}

func later(a, b changestream.Timestamp) changestream.Timestamp {
	if b.After(a) {
		return b
	}
	return a
}

// Tail is a tailable cursor's source on the oplog, as oplog tailers
// (change data capture tools, Meteor) read it: at the log's end it
// answers "nothing for now" and reads on from there the next time.
type Tail struct {
	log    storage.Reader
	filter *query.Filter
	after  changestream.Timestamp // the last entry read
	cur    *Cursor
}

// NewTail reads the entries of log after the timestamp after that filter
// passes.
func NewTail(log storage.Reader, filter *query.Filter, after changestream.Timestamp) *Tail {
	return &Tail{log: log, filter: filter, after: after}
}

// Next returns the next entry the filter passes; at the log's end it
// returns ok false and reads on from there at the next call.
func (t *Tail) Next() (bson.D, bool, error) {
	for {
		if t.cur == nil {
			t.cur = NewCursor(t.log, t.after)
		}
		d, ok, err := t.cur.Next()
		if err != nil || !ok {
			t.cur = nil
			return nil, false, err
		}
		if ts, isTS := entryTS(d); isTS {
			t.after = ts
		}
		if match, err := t.filter.MatchErr(d); err != nil || match {
			return d, err == nil, err
		}
	}
}

// Close releases nothing: each read of the log is its own.
func (t *Tail) Close() error { return nil }

func entryTS(entry bson.D) (changestream.Timestamp, bool) {
	v, _ := bsonutil.Field(entry, "ts")
	ts, ok := v.(bson.Timestamp)
	return changestream.Timestamp{T: ts.T, I: ts.I}, ok
}
