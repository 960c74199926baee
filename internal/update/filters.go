package update

import (
	"maps"
	"slices"
	"strings"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// arrayFilter is one entry of the command's arrayFilters: a query on the
// placeholder name, matched against {<id>: element}.
type arrayFilter struct {
	m    matcher
	used bool // named by some $[<id>] of the update
}

func (f *arrayFilter) matches(id string, v any) bool {
	return f.m.Match(bson.D{{Key: id, Value: plain(v)}})
}

const filterContext = "Error parsing array filter :: caused by :: "

func parseArrayFilters(list []bson.D, coll query.Collator) (map[string]*arrayFilter, error) {
	if len(list) == 0 {
		return nil, nil // nearly every update: a nil map reads as empty
	}
	out := make(map[string]*arrayFilter, len(list))
	for _, d := range list {
		id, f, err := parseArrayFilter(d, coll)
		if err != nil {
			return nil, err
		}
		if _, dup := out[id]; dup {
			return nil, errf(mongoerr.FailedToParse,
				"Found multiple array filters with the same top-level field name %s", id)
		}
		out[id] = f
	}
	return out, nil
}

func parseArrayFilter(d bson.D, coll query.Collator) (string, *arrayFilter, error) {
	m, err := compileFilter(d, coll)
	if err != nil {
		return "", nil, withContext(err)
	}
	id, err := placeholderOf(d)
	switch {
	case err != nil:
		return "", nil, err
	case id == "":
		return "", nil, errf(mongoerr.FailedToParse,
			"Cannot use an expression without a top-level field name in arrayFilters")
	case !validPlaceholder(id):
		return "", nil, errf(mongoerr.BadValue, filterContext+"The top-level field name must be "+
			"an alphanumeric string beginning with a lowercase letter, found '%s'", id)
	}
	return id, &arrayFilter{m: m}, nil
}

func withContext(err error) error {
	e := mongoerr.As(err)
	return mongoerr.New(e.Code, filterContext+e.Msg)
}

// placeholderOf finds the one identifier a filter's paths start with,
// looking through $and/$or/$nor as MongoDB does.
func placeholderOf(d bson.D) (string, error) {
	id := ""
	for _, e := range d {
		next, err := topLevelName(e)
		if err != nil {
			return "", err
		}
		if id != "" && next != "" && next != id {
			return "", errf(mongoerr.FailedToParse,
				filterContext+"Expected a single top-level field name, found '%s' and '%s'", id, next)
		}
		if id == "" {
			id = next
		}
	}
	return id, nil
}

func topLevelName(e bson.E) (string, error) {
	if !strings.HasPrefix(e.Key, "$") {
		name, _, _ := strings.Cut(e.Key, ".")
		return name, nil
	}
	if e.Key != "$and" && e.Key != "$or" && e.Key != "$nor" {
		return "", nil
	}
	var clauses bson.D
	for _, c := range arrOf(e.Value) {
		clauses = append(clauses, docOf(c)...)
	}
	return placeholderOf(clauses)
}

func validPlaceholder(id string) bool {
	if id[0] < 'a' || id[0] > 'z' {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// checkFiltersUsed rejects array filters no path names, reporting the
// first identifier in sorted order as MongoDB does.
func (u *Update) checkFiltersUsed() error {
	if len(u.filters) == 0 {
		return nil // sorting no ids still allocates
	}
	ids := slices.Sorted(maps.Keys(u.filters))
	for _, id := range ids {
		if !u.filters[id].used {
			return errf(mongoerr.FailedToParse, "The array filter for identifier '%s' was not used in the update %s",
				id, formatValue(u.source))
		}
	}
	return nil
}
