package update

import (
	"slices"
	"strings"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// pushSort is $push's $sort: whole elements (whole != 0) or by fields of
// elements. Unlike find's sort, a field is read with plain dotted lookup
// (no array expansion) and missing or non-document values sort as null.
type pushSort struct {
	whole  int
	fields []sortField
	cmp    func(a, b any) int // compareValues, or under a collation
}

type sortField struct {
	path []string
	dir  int
}

const pushSortInvalid = "The $sort is invalid: use 1/-1 to sort the whole element, " +
	"or {field:1/-1} to sort embedded fields"

func parsePushSort(v any) (*pushSort, error) {
	switch {
	case kindOf(v) == kindDoc:
		return parseSortPattern(docOf(v))
	case bsonutil.IsNumber(v):
		dir, ok := sortDirection(v)
		if !ok {
			return nil, errf(mongoerr.BadValue, "The $sort element value must be either 1 or -1")
		}
		return &pushSort{whole: dir}, nil
	}
	return nil, errf(mongoerr.BadValue, pushSortInvalid)
}

func sortDirection(v any) (int, bool) {
	if !bsonutil.IsNumber(v) {
		return 0, false
	}
	switch bsonutil.ToFloat(v) {
	case 1:
		return 1, true
	case -1:
		return -1, true
	}
	return 0, false
}

func parseSortPattern(d bson.D) (*pushSort, error) {
	if len(d) == 0 {
		return nil, errf(mongoerr.BadValue, "The sort pattern is empty when it should be a set of fields.")
	}
	s := &pushSort{}
	for _, e := range d {
		f, err := parseSortField(e)
		if err != nil {
			return nil, err
		}
		s.fields = append(s.fields, f)
	}
	return s, nil
}

func parseSortField(e bson.E) (sortField, error) {
	dir, ok := sortDirection(e.Value)
	if !ok {
		return sortField{}, errf(mongoerr.BadValue, "The sort element value must be either 1 or -1")
	}
	if e.Key == "" {
		return sortField{}, errf(mongoerr.BadValue, "The sort field cannot be empty")
	}
	parts := strings.Split(e.Key, ".")
	if slices.Contains(parts, "") {
		return sortField{}, errf(mongoerr.BadValue,
			"The sort field is a dotted field but has an empty part: %s", e.Key)
	}
	return sortField{path: parts, dir: dir}, nil
}

func (s *pushSort) apply(a bson.A) {
	slices.SortStableFunc(a, s.compare)
}

func (s *pushSort) compare(x, y any) int {
	cmp := s.cmp
	if cmp == nil {
		cmp = compareValues
	}
	if s.whole != 0 {
		return s.whole * cmp(x, y)
	}
	for _, f := range s.fields {
		if c := cmp(sortKey(x, f.path), sortKey(y, f.path)); c != 0 {
			return c * f.dir
		}
	}
	return 0
}

// sortKey reads a dotted field with no array expansion; array elements are
// reached only by numeric components. Missing values are null.
func sortKey(v any, path []string) any {
	for _, p := range path {
		var ok bool
		if v, ok = childValue(v, p); !ok {
			return nil
		}
	}
	return v
}

func childValue(v any, field string) (any, bool) {
	switch kindOf(v) {
	case kindDoc:
		return bsonutil.Lookup(docOf(v), field)
	case kindArr:
		a := arrOf(v)
		if i, ok := arrayIndex(field); ok && i < len(a) {
			return a[i], true
		}
	}
	return nil, false
}
