package changestream

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
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

// Filter is a stream's leading $match, pushed down.
type Filter struct {
	filter *query.Filter
	// key names the filter in the event cache when it is the whole
	// pipeline ("" otherwise).
	key string
	// sameForGroup: the filter does not read expired.expiredAt, so it
	// answers alike for every change of one kind, namespace and TTL
	// index (probeKey), as the thousand deletions of one expiry batch are.
	sameForGroup bool
}

// PushDownMatch splits a stream's pipeline into a leading $match tested
// on the change (nil when it cannot be) and the stages after it (nil
// when none remain).
func PushDownMatch(p *aggregate.Pipeline) (*Filter, *aggregate.Pipeline) {
	if p == nil {
		return nil, nil
	}
	f := p.LeadingMatchFilter()
	if f == nil || !readsOnly(f.Spec(), probeFields) {
		return nil, p
	}
	same := !readsExpiredAt(f.Spec())
	rest := p.WithoutStage(0)
	if rest.Len() > 0 {
		return &Filter{filter: f.Lean(), sameForGroup: same}, rest
	}
	return &Filter{filter: f.Lean(), key: "|" + bsonutil.Format(f.Spec()), sameForGroup: same}, nil
}

// readsExpiredAt reports whether a pushed-down filter may read
// expired.expiredAt: a path under it, or "expired" itself with any
// condition but $exists.
func readsExpiredAt(filter bson.D) bool {
	for _, e := range filter {
		switch e.Key {
		case "$and", "$or", "$nor":
			arr, _ := e.Value.(bson.A)
			for _, c := range arr {
				if d, ok := c.(bson.D); !ok || readsExpiredAt(d) {
					return true
				}
			}
			continue
		}
		if e.Key == "expired.expiredAt" || strings.HasPrefix(e.Key, "expired.expiredAt.") {
			return true
		}
		if e.Key == "expired" && !onlyExists(e.Value) {
			return true
		}
	}
	return false
}

// onlyExists reports whether a field's condition is {$exists: ...} alone.
func onlyExists(cond any) bool {
	d, ok := cond.(bson.D)
	return ok && len(d) == 1 && d[0].Key == "$exists"
}

// probeKey is what a filter that does not read expired.expiredAt sees of
// a change (see Filter.sameForGroup).
type probeKey struct {
	op        Op
	db, coll  string
	expired   bool
	index     string
	afterSecs int64
}

func probeKeyOf(ev *Event) probeKey {
	k := probeKey{op: ev.Op, db: ev.DB, coll: ev.Coll}
	if carriesExpired(ev) {
		k.expired, k.index, k.afterSecs = true, ev.Expired.Index, ev.Expired.AfterSecs
	}
	return k
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
		if strings.HasPrefix(e.Key, "$") || !slices.Contains(roots, root) {
			return false
		}
	}
	return true
}

// probe is the part of a change's event a pushed-down $match reads, as
// eventDoc builds it.
func probe(ev *Event) bson.D {
	d := bson.D{{Key: "operationType", Value: ev.Op.String()}, {Key: "ns", Value: nsDoc(ev.DB, ev.Coll)}}
	if exp, ok := expiredDoc(ev); ok {
		d = append(d, bson.E{Key: "expired", Value: exp})
	}
	return d
}

// keeps reports whether the stream's pushed-down $match keeps the
// change's event (true without one).
func (s *Spec) keeps(ev *Event) (bool, error) {
	if s.Match == nil {
		return true, nil
	}
	return s.Match.filter.MatchErr(probe(ev))
}

// probeMemo is a stream's last pushed-down filter answer, reused for
// the changes that filter cannot tell apart.
type probeMemo struct {
	valid bool
	key   probeKey
	keep  bool
}

// keeps is Spec.keeps, answered from the memo when the filter
// cannot tell ev from the change before it.
func (c *Stream) keeps(ev *Event) (bool, error) {
	m := c.spec.Match
	if m == nil || !m.sameForGroup {
		return c.spec.keeps(ev)
	}
	k := probeKeyOf(ev)
	if c.memo.valid && c.memo.key == k {
		return c.memo.keep, nil
	}
	keep, err := c.spec.keeps(ev)
	if err != nil {
		return false, err
	}
	c.memo = probeMemo{valid: true, key: k, keep: keep}
	return keep, nil
}

// matching is the events the stream's pushed-down $match keeps, tested
// on the built events.
func (s *Spec) matching(docs []bson.D) ([]bson.D, error) {
	if s.Match == nil {
		return docs, nil
	}
	var out []bson.D
	for _, d := range docs {
		ok, err := s.Match.filter.MatchErr(d)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, d)
		}
	}
	return out, nil
}
