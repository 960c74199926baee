package aggregate

import (
	"maps"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// lookupStage is $lookup: an equality join on localField/foreignField, a
// correlated sub-pipeline (let + pipeline), or both.
type lookupStage struct {
	from, localField, foreignField string
	as                             []string
	let                            []letVar
	pipeline                       *Pipeline
}

// lookupSpec is the raw, not yet validated, $lookup arguments.
type lookupSpec struct {
	strs     map[string]string
	let      bson.D
	pipeline bson.A
	hasLet   bool
	hasPipe  bool
}

func parseLookup(spec any, opt Options) (stage, error) {
	d, ok := spec.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.FailedToParse,
			"the $lookup stage specification must be an object, but found %s", typeNameOf(spec))
	}
	raw, err := readLookupSpec(d)
	if err != nil {
		return nil, err
	}
	if err := checkLookupSpec(d, raw); err != nil {
		return nil, err
	}
	return buildLookup(raw, opt)
}

func readLookupSpec(d bson.D) (*lookupSpec, error) {
	raw := &lookupSpec{strs: map[string]string{}}
	for _, e := range d {
		switch e.Key {
		case "from", "as", "localField", "foreignField":
			s, ok := e.Value.(string)
			if !ok {
				return nil, mongoerr.Newf(mongoerr.FailedToParse, "$lookup argument '%s' must be a string, is type %s",
					e.Key, typeNameOf(e.Value))
			}
			raw.strs[e.Key] = s
		case "let":
			if raw.let, raw.hasLet = e.Value.(bson.D); !raw.hasLet {
				return nil, mongoerr.Newf(mongoerr.FailedToParse, "$lookup argument 'let' must be an object, is type %s",
					typeNameOf(e.Value))
			}
		case "pipeline":
			if raw.pipeline, raw.hasPipe = e.Value.(bson.A); !raw.hasPipe {
				return nil, mongoerr.New(mongoerr.FailedToParse, "'pipeline' option must be specified as an array")
			}
		default:
			return nil, mongoerr.Newf(mongoerr.FailedToParse, "unknown argument to $lookup: %s", e.Key)
		}
	}
	return raw, nil
}

func checkLookupSpec(d bson.D, raw *lookupSpec) error {
	_, hasLocal := raw.strs["localField"]
	_, hasForeign := raw.strs["foreignField"]
	switch {
	case raw.strs["from"] == "":
		return mongoerr.Newf(mongoerr.FailedToParse, "missing 'from' option to $lookup stage specification: %s",
			bsonutil.Format(d))
	case raw.strs["as"] == "":
		return mongoerr.New(mongoerr.FailedToParse, "must specify 'as' field for a $lookup")
	case !raw.hasPipe && !(hasLocal && hasForeign):
		return mongoerr.New(mongoerr.FailedToParse,
			"$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified")
	case hasLocal != hasForeign:
		return mongoerr.New(mongoerr.FailedToParse,
			"$lookup requires both or neither of 'localField' and 'foreignField' to be specified")
	case raw.hasLet && !raw.hasPipe:
		return mongoerr.New(mongoerr.FailedToParse, "$lookup with a 'let' argument must also specify 'pipeline'")
	}
	return nil
}

func buildLookup(raw *lookupSpec, opt Options) (stage, error) {
	as, err := splitFieldPath(raw.strs["as"])
	if err != nil {
		return nil, err
	}
	s := &lookupStage{from: raw.strs["from"], localField: raw.strs["localField"],
		foreignField: raw.strs["foreignField"], as: as}
	if s.let, err = parseLet(raw.let); err != nil {
		return nil, err
	}
	if raw.hasPipe {
		sub := &Pipeline{opt: opt}
		if err := sub.parseStages(raw.pipeline, "$lookup"); err != nil {
			return nil, err
		}
		s.pipeline = sub
	}
	return s, nil
}

func (s *lookupStage) run(in Iterator, rc *runCtx) (Iterator, error) {
	var foreign []bson.D
	loaded := false
	return &mapIter{in: in, name: "$lookup", f: oneToOne(func(d bson.D) (bson.D, error) {
		if !loaded {
			var err error
			if foreign, err = s.loadForeign(rc); err != nil {
				return nil, err
			}
			loaded = true
		}
		matches, err := s.join(d, foreign, rc)
		if err != nil {
			return nil, err
		}
		return setPath(d, s.as, matches), nil
	})}, nil
}

// loadForeign reads the foreign collection once per run.
func (s *lookupStage) loadForeign(rc *runCtx) ([]bson.D, error) {
	it, err := rc.env.Collection(s.from)
	if err != nil {
		return nil, err
	}
	return drain(it, rc, "$lookup")
}

// join returns the array of foreign documents joined to d.
func (s *lookupStage) join(d bson.D, foreign []bson.D, rc *runCtx) (bson.A, error) {
	candidates := foreign
	if s.localField != "" {
		var err error
		if candidates, err = s.equalityMatches(d, foreign, rc); err != nil {
			return nil, err
		}
	}
	if s.pipeline != nil {
		return s.runSubPipeline(d, candidates, rc)
	}
	out := make(bson.A, len(candidates))
	for i, c := range candidates {
		out[i] = c
	}
	return out, nil
}

// equalityMatches selects the foreign documents whose foreignField equals
// any value of d's localField (array elements count separately, and a
// missing local value matches null and missing), as {$in: values} does.
func (s *lookupStage) equalityMatches(d bson.D, foreign []bson.D, rc *runCtx) ([]bson.D, error) {
	f, err := query.NewFilterWith(bson.D{{Key: s.foreignField, Value: bson.D{{Key: "$in", Value: localValues(d, s.localField)}}}},
		query.FilterOptions{Collation: rc.opt.Collation})
	if err != nil {
		return nil, err
	}
	var out []bson.D
	for _, fd := range foreign {
		if err := rc.guard.Step(); err != nil {
			return nil, err
		}
		if f.Match(fd) {
			out = append(out, fd)
		}
	}
	return out, nil
}

func localValues(d bson.D, path string) bson.A {
	vals := bson.A{}
	for _, v := range bsonutil.PathValues(d, path) {
		if a, ok := v.(bson.A); ok {
			vals = append(vals, a...)
		} else {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		vals = append(vals, nil)
	}
	return vals
}

// runSubPipeline runs the pipeline over the candidates with the let
// variables bound from d.
func (s *lookupStage) runSubPipeline(d bson.D, candidates []bson.D, rc *runCtx) (bson.A, error) {
	vars := maps.Clone(rc.variables())
	for _, v := range s.let {
		val, err := v.e.Eval(d, rc.variables())
		if err != nil {
			return nil, err
		}
		vars[v.name] = val
	}
	it, err := s.pipeline.runWith(&sliceIter{docs: candidates}, &runCtx{env: rc.env, vars: vars, opt: rc.opt})
	if err != nil {
		return nil, err
	}
	docs, err := drain(it, rc, "$lookup")
	out := make(bson.A, len(docs))
	for i, doc := range docs {
		out[i] = doc
	}
	return out, err
}
