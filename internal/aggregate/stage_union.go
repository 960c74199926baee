package aggregate

import (
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// unionWithStage is $unionWith: the input, then another collection's
// documents (through an optional pipeline).
type unionWithStage struct {
	coll     string
	pipeline *Pipeline
}

func parseUnionWith(spec any, opt Options) (stage, error) {
	if s, ok := spec.(string); ok {
		return &unionWithStage{coll: s}, nil
	}
	d, ok := spec.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.FailedToParse,
			"the $unionWith stage specification must be an object or string, but found %s", typeNameOf(spec))
	}
	u := &unionWithStage{}
	for _, e := range d {
		if err := u.option(e, opt); err != nil {
			return nil, err
		}
	}
	if u.coll == "" {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$unionWith.coll' is missing but a required field")
	}
	return u, nil
}

func (u *unionWithStage) option(e bson.E, opt Options) error {
	switch e.Key {
	case "coll":
		s, ok := e.Value.(string)
		if !ok {
			return mongoerr.Newf(mongoerr.TypeMismatch,
				"BSON field '$unionWith.coll' is the wrong type '%s', expected type 'string'", typeNameOf(e.Value))
		}
		u.coll = s
	case "pipeline":
		stages, ok := e.Value.(bson.A)
		if !ok {
			return mongoerr.Newf(mongoerr.TypeMismatch,
				"BSON field '$unionWith.pipeline' is the wrong type '%s', expected type 'array'", typeNameOf(e.Value))
		}
		u.pipeline = &Pipeline{opt: opt}
		return u.pipeline.parseStages(stages, "$unionWith")
	default:
		return mongoerr.Newf(mongoerr.Location40415, "BSON field '$unionWith.%s' is an unknown field.", e.Key)
	}
	return nil
}

func (u *unionWithStage) run(in Iterator, rc *runCtx) (Iterator, error) {
	return &unionIter{first: in, open: func() (Iterator, error) {
		it, err := rc.env.Collection(u.coll)
		if err != nil || u.pipeline == nil {
			return it, err
		}
		return u.pipeline.runWith(it, rc)
	}}, nil
}

// unionIter drains first, then the iterator open returns.
type unionIter struct {
	first, second Iterator
	open          func() (Iterator, error)
}

func (it *unionIter) Next() (bson.D, bool, error) {
	if it.first != nil {
		doc, ok, err := it.first.Next()
		if err != nil || ok {
			return doc, ok, err
		}
		it.first.Close()
		it.first = nil
		if it.second, err = it.open(); err != nil {
			return nil, false, err
		}
	}
	if it.second == nil {
		return nil, false, nil
	}
	return it.second.Next()
}

func (it *unionIter) Close() error {
	if it.first != nil {
		return it.first.Close()
	}
	if it.second != nil {
		return it.second.Close()
	}
	return nil
}

// sampleStage is $sample: size documents chosen uniformly at random
// (reservoir sampling over the whole input).
type sampleStage struct{ size int64 }

func parseSample(spec any, _ Options) (stage, error) {
	d, ok := spec.(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location28745, "the $sample stage specification must be an object")
	}
	size := int64(-1)
	for _, e := range d {
		if e.Key != "size" {
			return nil, mongoerr.Newf(mongoerr.Location28748, "unrecognized option to $sample: %s", e.Key)
		}
		if !bsonutil.IsNumber(e.Value) {
			return nil, mongoerr.New(mongoerr.Location28746, "size argument to $sample must be a number")
		}
		if size = int64(bsonutil.ToFloat(e.Value)); size < 0 {
			return nil, mongoerr.New(mongoerr.Location28747, "size argument to $sample must not be negative")
		}
	}
	if size < 0 {
		return nil, mongoerr.New(mongoerr.Location28749, "$sample stage must specify a size")
	}
	return &sampleStage{size: size}, nil
}

func (s *sampleStage) run(in Iterator, rc *runCtx) (Iterator, error) {
	defer in.Close()
	var res []bson.D
	var mem memTracker
	seen := int64(0)
	for {
		doc, ok, err := in.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		seen++
		if int64(len(res)) < s.size {
			res = append(res, doc)
			if err := mem.add(approxSize(doc), rc, "$sample"); err != nil {
				return nil, err
			}
		} else if j := rand.Int64N(seen); j < s.size {
			res[j] = doc
		}
	}
	rand.Shuffle(len(res), func(i, j int) { res[i], res[j] = res[j], res[i] })
	return &sliceIter{docs: res}, nil
}
