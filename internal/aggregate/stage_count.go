package aggregate

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// countStage is $count: one document {name: n}, or none for empty input
// (it is $group {_id: null, name: {$sum: 1}} without the _id).
type countStage struct{ name string }

func parseCount(spec any, _ Options) (stage, error) {
	s, ok := spec.(string)
	switch {
	case !ok:
		return nil, mongoerr.New(mongoerr.Location40156, "the count field must be a non-empty string")
	case s == "":
		return nil, mongoerr.New(mongoerr.Location40157, "the count field must be a non-empty string")
	case s[0] == '$':
		return nil, mongoerr.New(mongoerr.Location40158, "the count field cannot be a $-prefixed path")
	case strings.ContainsRune(s, 0):
		return nil, mongoerr.New(mongoerr.Location40159, "the count field cannot contain a null byte")
	case strings.Contains(s, "."):
		return nil, mongoerr.New(mongoerr.Location40160, "the count field cannot contain '.'")
	}
	return &countStage{name: s}, nil
}

func (s *countStage) run(in Iterator, _ *runCtx) (Iterator, error) {
	defer in.Close()
	var n int64
	for {
		_, ok, err := in.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		n++
	}
	if n == 0 {
		return &sliceIter{}, nil
	}
	var v any = n
	if n <= math.MaxInt32 {
		v = int32(n)
	}
	return &sliceIter{docs: []bson.D{{{Key: s.name, Value: v}}}}, nil
}

// groupSortStage is a $group followed by a $sort: $sortByCount (sorted
// by count descending) and $bucket (sorted by bucket).
type groupSortStage struct {
	group *groupStage
	sort  *query.Sort
}

func parseSortByCount(spec any, _ Options) (stage, error) {
	str, isStr := spec.(string)
	isPath := isStr && strings.HasPrefix(str, "$")
	if !isPath && !isOperatorDoc(spec) {
		return nil, mongoerr.New(mongoerr.Location40148, "the sortByCount field must be defined as a $-prefixed path or an expression")
	}
	id, err := expr.Compile(spec)
	if err != nil {
		return nil, err
	}
	one, _ := expr.Compile(int32(1))
	sort, err := query.NewSort(bson.D{{Key: "count", Value: int32(-1)}})
	if err != nil {
		return nil, err
	}
	g := &groupStage{id: id, fields: []groupField{{name: "count", op: "$sum", arg: one}}}
	return &groupSortStage{group: g, sort: sort}, nil
}

func (s *groupSortStage) run(in Iterator, rc *runCtx) (Iterator, error) {
	grouped, err := s.group.run(in, rc)
	if err != nil {
		return nil, err
	}
	return (&sortStage{sort: s.sort}).run(grouped, rc)
}

// typeNameOf is MongoDB's name for v's type, for messages.
func typeNameOf(v any) string { return bsonutil.TypeName(v) }
