package aggregate

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// unwindStage is $unwind: one output document per element of the array
// at path.
type unwindStage struct {
	path     []string
	index    []string // includeArrayIndex path, nil if not requested
	preserve bool
}

func parseUnwind(spec any, _ Options) (stage, error) {
	var prefixed string
	s := &unwindStage{}
	switch x := spec.(type) {
	case string:
		prefixed = x
	case bson.D:
		p, err := s.parseOptions(x)
		if err != nil {
			return nil, err
		}
		prefixed = p
	default:
		return nil, mongoerr.Newf(mongoerr.Location15981,
			"expected either a string or an object as specification for $unwind stage, got %s", typeNameOf(spec))
	}
	if prefixed == "" {
		return nil, mongoerr.New(mongoerr.Location28812, "no path specified to $unwind stage")
	}
	if !strings.HasPrefix(prefixed, "$") {
		return nil, mongoerr.Newf(mongoerr.Location28818, "path option to $unwind stage should be prefixed with a '$': %s", prefixed)
	}
	path, err := splitFieldPath(prefixed[1:])
	s.path = path
	return s, err
}

// parseOptions reads the document form and returns the path.
func (s *unwindStage) parseOptions(d bson.D) (string, error) {
	var path string
	for _, e := range d {
		var err error
		switch e.Key {
		case "path":
			var ok bool
			if path, ok = e.Value.(string); !ok {
				err = mongoerr.Newf(mongoerr.Location28808, "expected a string as the path for $unwind stage, got %s", typeNameOf(e.Value))
			}
		case "preserveNullAndEmptyArrays":
			var ok bool
			if s.preserve, ok = e.Value.(bool); !ok {
				err = mongoerr.Newf(mongoerr.Location28809,
					"expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage, got %s",
					typeNameOf(e.Value))
			}
		case "includeArrayIndex":
			err = s.parseIndexOption(e.Value)
		default:
			err = mongoerr.Newf(mongoerr.Location28811, "unrecognized option to $unwind stage: %s", e.Key)
		}
		if err != nil {
			return "", err
		}
	}
	return path, nil
}

func (s *unwindStage) parseIndexOption(v any) error {
	str, ok := v.(string)
	if !ok || str == "" {
		return mongoerr.Newf(mongoerr.Location28810,
			"expected a non-empty string for the includeArrayIndex  option to $unwind stage, got %s", typeNameOf(v))
	}
	if strings.HasPrefix(str, "$") {
		return mongoerr.Newf(mongoerr.Location28822,
			"includeArrayIndex option to $unwind stage should not be prefixed with a '$': %s", str)
	}
	idx, err := splitFieldPath(str)
	s.index = idx
	return err
}

func (s *unwindStage) run(in Iterator, _ *runCtx) (Iterator, error) {
	return &unwindIter{in: in, s: s}, nil
}

// unwindIter makes each element's document only when it is asked for, so
// a large array never sits in memory as documents and the pipeline's look
// at the operation's end between documents comes between elements too.
type unwindIter struct {
	in   Iterator
	s    *unwindStage
	doc  bson.D // the document whose array is being unwound
	arr  bson.A
	next int
}

func (u *unwindIter) Next() (bson.D, bool, error) {
	for u.next >= len(u.arr) {
		d, ok, err := u.in.Next()
		if err != nil || !ok {
			return nil, false, err
		}
		if arr, isArray := u.s.nonEmptyArray(d); isArray {
			u.doc, u.arr, u.next = d, arr, 0
			continue
		}
		if out, ok := u.s.single(d); ok {
			return out, true, nil
		}
	}
	i := u.next
	u.next++
	return u.s.withIndex(setPath(u.doc, u.s.path, u.arr[i]), int64(i)), true, nil
}

func (u *unwindIter) Close() error { return u.in.Close() }

// nonEmptyArray returns the array at the unwound path when there is one
// with elements.
func (s *unwindStage) nonEmptyArray(d bson.D) (bson.A, bool) {
	v, _ := getPath(d, s.path)
	arr, ok := v.(bson.A)
	return arr, ok && len(arr) > 0
}

// single is what a document without a non-empty array at the path
// unwinds to: a non-array value counts as a one-element array; null,
// missing and empty arrays produce nothing unless preserved.
func (s *unwindStage) single(d bson.D) (bson.D, bool) {
	v, ok := getPath(d, s.path)
	if arr, isArray := v.(bson.A); (!ok || isNull(v) || isArray && len(arr) == 0) && !s.preserve {
		return nil, false
	}
	return s.withIndex(d, nil), true
}

func (s *unwindStage) withIndex(d bson.D, i any) bson.D {
	if s.index == nil {
		return d
	}
	return setPath(d, s.index, i)
}

func isNull(v any) bool {
	switch v.(type) {
	case nil, bson.Null:
		return true
	}
	return false
}
