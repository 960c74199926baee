package aggregate

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// sortStage is $sort. When a $limit follows, only the top documents are
// kept (as MongoDB's top-k sort does), which also bounds its memory.
type sortStage struct {
	spec  bson.D
	sort  *query.Sort
	limit int64
	// check, when set, replaces the $sort memory limit (find's SORT has
	// its own message); then, when set, wraps the sorted output.
	check func(held int64) error
	then  func(Iterator) Iterator
	// sizeKey names the bytes sorted in explain: $sort and find's SORT
	// call it differently.
	sizeKey string
}

func parseSort(spec any, opt Options) (stage, error) {
	d, ok := spec.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location15973, "the $sort key specification must be an object")
	}
	if len(d) == 0 {
		return nil, mongoerr.New(mongoerr.Location15976, "$sort stage must have at least one sort key")
	}
	for _, e := range d {
		if bsonutil.IsNumber(e.Value) && math.Abs(bsonutil.ToFloat(e.Value)) != 1 {
			return nil, mongoerr.New(mongoerr.Location15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
		}
	}
	s, err := query.NewSort(d)
	if err != nil {
		return nil, err
	}
	if opt.Collation != nil {
		s = s.WithCollation(opt.Collation)
	}
	return &sortStage{spec: d, sort: s, sizeKey: "totalDataSizeSortedBytesEstimate"}, nil
}

// fuseSortLimit gives each $sort directly followed by $limit that limit.
// Explain then shows them as mongod does: one $sort {sortKey, limit}, the
// $limit absorbed.
func (p *Pipeline) fuseSortLimit() {
	p.absorbed = make([]bool, len(p.stages))
	for i := 0; i+1 < len(p.stages); i++ {
		s, ok := p.stages[i].(*sortStage)
		l, isLimit := p.stages[i+1].(*limitStage)
		if ok && isLimit {
			fused := *s
			fused.limit = l.n
			p.stages[i] = &fused
			p.specs[i].Value = bson.D{{Key: "sortKey", Value: s.spec}, {Key: "limit", Value: l.n}}
			p.absorbed[i+1] = true
		}
	}
}

// explainSpecs gives $sort, $skip and $limit the arguments mongod's
// explain shows: {sortKey}, and the counts as longs.
func (p *Pipeline) explainSpecs() {
	for i, st := range p.stages {
		switch s := st.(type) {
		case *sortStage:
			p.specs[i].Value = bson.D{{Key: "sortKey", Value: s.spec}}
		case *skipStage:
			p.specs[i].Value = s.n
		case *limitStage:
			p.specs[i].Value = s.n
		}
	}
}

// run sorts the whole input under the memory limit; with a fused limit
// it holds only the best documents (SortBuffered).
func (s *sortStage) run(in Iterator, rc *runCtx) (Iterator, error) {
	defer in.Close()
	check := s.check
	if check == nil {
		check = func(held int64) error {
			if err := rc.guard.Step(); err != nil {
				return err
			}
			mem := memTracker{used: held}
			return mem.add(0, rc, "$sort")
		}
	}
	docs, size, err := SortBuffered(in, s.sort, s.limit, check)
	if err != nil {
		return nil, err
	}
	if rc.cur != nil && s.sizeKey != "" {
		rc.cur.Exec = bson.D{
			{Key: s.sizeKey, Value: size},
			{Key: "usedDisk", Value: false},
			{Key: "spills", Value: int64(0)},
			{Key: "spilledDataStorageSize", Value: int64(0)},
		}
	}
	var out Iterator = &sliceIter{docs: docs}
	if s.then != nil {
		out = s.then(out)
	}
	return out, nil
}

// limitStage is $limit.
type limitStage struct{ n int64 }

func parseLimit(spec any, _ Options) (stage, error) {
	n, err := parseCount64(spec, "$limit", mongoerr.Location5107201)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, mongoerr.New(mongoerr.Location15958, "the limit must be positive")
	}
	return &limitStage{n: n}, nil
}

func (s *limitStage) run(in Iterator, _ *runCtx) (Iterator, error) {
	return Limit(in, s.n), nil
}

type limitIter struct {
	in   Iterator
	left int64
}

func (it *limitIter) Next() (bson.D, bool, error) {
	if it.left <= 0 {
		return nil, false, nil
	}
	it.left--
	return it.in.Next()
}

func (it *limitIter) Close() error { return it.in.Close() }

// skipStage is $skip.
type skipStage struct{ n int64 }

func parseSkip(spec any, _ Options) (stage, error) {
	n, err := parseCount64(spec, "$skip", mongoerr.Location5107200)
	if err != nil {
		return nil, err
	}
	return &skipStage{n: n}, nil
}

func (s *skipStage) run(in Iterator, _ *runCtx) (Iterator, error) {
	return Skip(in, s.n), nil
}

type skipIter struct {
	in   Iterator
	left int64
}

func (it *skipIter) Next() (bson.D, bool, error) {
	for ; it.left > 0; it.left-- {
		if _, ok, err := it.in.Next(); err != nil || !ok {
			return nil, false, err
		}
	}
	return it.in.Next()
}

func (it *skipIter) Close() error { return it.in.Close() }

// parseCount64 validates a $skip/$limit argument as MongoDB 5.0+ does: a
// non-negative integral number representable as a 64-bit integer.
func parseCount64(v any, stage string, code mongoerr.Code) (int64, error) {
	fail := func(reason string) error {
		return mongoerr.Newf(code, "invalid argument to %s stage: %s: %s: %s",
			stage, reason, stage, bsonutil.Format(v))
	}
	if !bsonutil.IsNumber(v) {
		return 0, mongoerr.Newf(code, "invalid argument to %s stage: Expected a number in: %s: %s",
			stage, stage, bsonutil.Format(v))
	}
	f := bsonutil.ToFloat(v)
	switch {
	case math.IsNaN(f):
		return 0, mongoerr.Newf(code, "invalid argument to %s stage: Expected an integer, but found NaN in: %s: %s",
			stage, stage, bsonutil.Format(v))
	case f != math.Trunc(f):
		return 0, fail("Expected an integer")
	case f >= 9.223372036854775807e18 || f < -9.223372036854775808e18:
		return 0, fail("Cannot represent as a 64-bit integer")
	}
	n := int64(f)
	if i, ok := v.(int64); ok {
		n = i
	}
	if n < 0 {
		return 0, mongoerr.Newf(code, "invalid argument to %s stage: Expected a non-negative number in: %s: %s",
			stage, stage, bsonutil.Format(v))
	}
	return n, nil
}
