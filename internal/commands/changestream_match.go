package commands

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/query"
)

// A stream's leading $match that reads only operationType, ns and
// expired is tested on the change before its event is built: those
// fields cost nothing to make, and a stream filtering a storm (or
// keeping only its expiries) no longer builds and runs the pipeline on
// every event. When that $match is the whole pipeline, the events it
// keeps are the plain events, shared with other streams of the same
// options and filter through the event cache.

// probeFields are the event fields a pushed-down $match may read.
var probeFields = []string{"operationType", "ns", "expired"}

// streamFilter is a stream's leading $match, pushed down.
type streamFilter struct {
	filter *query.Filter
	// key names the filter in the event cache when it is the whole
	// pipeline ("" otherwise).
	key string
}

// pushDownMatch splits a stream's pipeline into a leading $match tested
// on the change (nil when it cannot be) and the stages after it (nil
// when none remain).
func pushDownMatch(p *aggregate.Pipeline) (*streamFilter, *aggregate.Pipeline) {
	if p == nil {
		return nil, nil
	}
	f := p.LeadingMatchFilter()
	if f == nil || !readsOnly(f.Spec(), probeFields) {
		return nil, p
	}
	rest := p.WithoutStage(0)
	if rest.Len() > 0 {
		return &streamFilter{filter: f.Lean()}, rest
	}
	return &streamFilter{filter: f.Lean(), key: "|" + bsonutil.Format(f.Spec())}, nil
}

// readsOnly reports whether a query filter reads no field outside roots
// (the first element of each path), looking into $and, $or and $nor; any
// other top-level operator ($where, $text, $jsonSchema, ...) counts as
// reading everything.
func readsOnly(filter bson.D, roots []string) bool {
	for _, e := range filter {
		switch e.Key {
		case "$comment":
			continue
		case "$and", "$or", "$nor":
			arr, ok := e.Value.(bson.A)
			if !ok {
				return false
			}
			for _, c := range arr {
				d, ok := c.(bson.D)
				if !ok || !readsOnly(d, roots) {
					return false
				}
			}
			continue
		}
		root, _, _ := strings.Cut(e.Key, ".")
		if strings.HasPrefix(e.Key, "$") || !contains(roots, root) {
			return false
		}
	}
	return true
}

// probe is the part of a change's event a pushed-down $match reads, as
// eventDoc builds it.
func probe(ev *changestream.Event) bson.D {
	d := bson.D{{Key: "operationType", Value: ev.Op.String()}, {Key: "ns", Value: nsDoc(ev.DB, ev.Coll)}}
	if exp, ok := expiredDoc(ev); ok {
		d = append(d, bson.E{Key: "expired", Value: exp})
	}
	return d
}

// keeps reports whether the stream's pushed-down $match keeps the
// change's event (true without one).
func (s *streamSpec) keeps(ev *changestream.Event) (bool, error) {
	if s.match == nil {
		return true, nil
	}
	return s.match.filter.MatchErr(probe(ev))
}

// matching is the events the stream's pushed-down $match keeps, tested
// on the built events.
func (s *streamSpec) matching(docs []bson.D) ([]bson.D, error) {
	if s.match == nil {
		return docs, nil
	}
	var out []bson.D
	for _, d := range docs {
		ok, err := s.match.filter.MatchErr(d)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, d)
		}
	}
	return out, nil
}
