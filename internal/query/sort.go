package query

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Sort is a parsed sort specification. It is immutable and safe for
// concurrent use.
type Sort struct {
	keys    []sortKey
	natural int // 1 or -1 for {$natural: ±1}, 0 otherwise
}

type sortKey struct {
	path string
	desc bool
	coll Collator // nil: simple comparison
}

// WithCollation returns the sort comparing strings under c.
func (s *Sort) WithCollation(c Collator) *Sort {
	out := &Sort{natural: s.natural, keys: append([]sortKey(nil), s.keys...)}
	for i := range out.keys {
		out.keys[i].coll = c
	}
	return out
}

// NewSort parses a sort specification: each value a number equal to 1 or
// -1. {$natural: ±1} is accepted and reported by Natural, for the caller
// to scan in storage order; {$meta: ...} is not supported.
func NewSort(spec bson.D) (*Sort, error) {
	s := &Sort{}
	for _, e := range spec {
		dir, err := sortDirection(e)
		if err != nil {
			return nil, err
		}
		if e.Key == "$natural" {
			s.natural = dir
			continue
		}
		if err := validateFieldPath(e.Key); err != nil {
			return nil, err
		}
		s.keys = append(s.keys, sortKey{path: e.Key, desc: dir < 0})
	}
	return s, nil
}

func sortDirection(e bson.E) (int, error) {
	if d, ok := asDoc(e.Value); ok {
		if len(d) > 0 && d[0].Key == "$meta" {
			return 0, mongoerr.New(mongoerr.NotImplemented, "$meta sort is not supported by Mayfly: it has no text search")
		}
		return 0, mongoerr.Newf(mongoerr.Location17312, "$meta is the only expression supported by $sort right now")
	}
	if !bsonutil.IsNumber(e.Value) {
		return 0, mongoerr.Newf(mongoerr.Location15974, "Illegal key in $sort specification: %s", bsonutil.FormatElem(e.Key, e.Value))
	}
	switch f := bsonutil.ToFloat(e.Value); f {
	case 1:
		return 1, nil
	case -1:
		return -1, nil
	}
	return 0, mongoerr.New(mongoerr.Location15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
}

// Natural returns 1 or -1 for a {$natural: ±1} sort, 0 otherwise.
func (s *Sort) Natural() int { return s.natural }

// IsEmpty reports whether the sort orders nothing (beyond $natural).
func (s *Sort) IsEmpty() bool { return len(s.keys) == 0 }

// Compare orders two documents as MongoDB's find sort does: each key is
// the smallest (ascending) or largest (descending) of the values the path
// yields with multikey array expansion (bsonutil.IndexKeys), so a missing
// path sorts as null and an empty array as undefined, below null. It
// returns -1, 0 or +1.
func (s *Sort) Compare(a, b bson.D) int {
	for _, k := range s.keys {
		if c := k.compare(k.value(a), k.value(b)); c != 0 {
			return c
		}
	}
	return 0
}

// Sort sorts docs in place, stably, computing each sort key once.
func (s *Sort) Sort(docs []bson.D) { _ = s.SortUntil(docs, func() error { return nil }) }

// stopEvery is how many comparisons a sort makes between calls of its
// stop function.
const stopEvery = 1024

// SortUntil is Sort that calls stop every stopEvery comparisons (and once
// per document keyed) and gives up with its error: sorting a million
// documents takes seconds, and an operation that has ended must not wait
// for it. docs is left in some order when it gives up.
func (s *Sort) SortUntil(docs []bson.D, stop func() error) error {
	if len(s.keys) == 0 || len(docs) < 2 {
		return stop()
	}
	type keyed struct {
		doc  bson.D
		keys []any
	}
	items := make([]keyed, len(docs))
	for i, d := range docs {
		if err := stop(); err != nil {
			return err
		}
		items[i] = keyed{doc: d, keys: s.values(d)}
	}
	var stopped error
	compared := 0
	slices.SortStableFunc(items, func(x, y keyed) int {
		// Once stopped every comparison answers at once, so the sort
		// runs out quickly (a sort cannot be left midway).
		if compared++; stopped != nil || (compared%stopEvery == 0 && stopErr(stop, &stopped)) {
			return 0
		}
		return s.CompareKeys(x.keys, y.keys)
	})
	if stopped != nil {
		return stopped
	}
	for i := range items {
		docs[i] = items[i].doc
	}
	return nil
}

// stopErr calls stop, keeping its error in *into; it reports whether
// there was one.
func stopErr(stop func() error, into *error) bool {
	*into = stop()
	return *into != nil
}

// Keys returns a document's sort key, one value per sort field, for
// CompareKeys: a merge that compares each document many times computes
// its key once.
func (s *Sort) Keys(d bson.D) []any { return s.values(d) }

// CompareKeys orders two keys from Keys as Compare orders their
// documents.
func (s *Sort) CompareKeys(a, b []any) int {
	for i, k := range s.keys {
		if c := k.compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

func (s *Sort) values(d bson.D) []any {
	out := make([]any, len(s.keys))
	for i, k := range s.keys {
		out[i] = k.value(d)
	}
	return out
}

// value is the document's sort key on this path.
func (k sortKey) value(d bson.D) any {
	keys, _ := bsonutil.IndexKeys(d, k.path)
	if k.coll != nil {
		keyed := make([]any, len(keys))
		for i, v := range keys {
			keyed[i] = k.coll.Value(v)
		}
		keys = keyed
	}
	best := keys[0]
	for _, v := range keys[1:] {
		c := bsonutil.Compare(v, best)
		if (k.desc && c > 0) || (!k.desc && c < 0) {
			best = v
		}
	}
	return best
}

func (k sortKey) compare(x, y any) int {
	c := bsonutil.Compare(x, y)
	if k.desc {
		return -c
	}
	return c
}

// String renders the specification, for messages and plan output.
func (s *Sort) String() string {
	parts := make([]string, 0, len(s.keys))
	for _, k := range s.keys {
		dir := "1"
		if k.desc {
			dir = "-1"
		}
		parts = append(parts, k.path+": "+dir)
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}
