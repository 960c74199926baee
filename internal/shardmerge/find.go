package shardmerge

import (
	"fmt"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// FindSplit is a find command split for several shards: the command each
// shard runs and what the router does with their results.
//
// A find that targets one shard needs no split: the router forwards the
// command unchanged, as mongod's router does, and the shard applies skip
// and limit itself.
type FindSplit struct {
	// ShardCommand is the command each shard runs: the user's command
	// without skip, with limit raised to skip+limit, singleBatch false
	// (one batch to the client may take several from a shard), and a
	// projection that keeps the sort keys.
	ShardCommand bson.D

	sort        *query.Sort // nil: no sort, or {$natural: ±1}
	skip, limit int64       // limit 0: none
	// project, when set, is the user's projection, applied by the router
	// after skip and limit because the shards' projection differs.
	project    *query.Projection
	positional *query.Filter // the filter, for a positional projection
}

// SplitFind splits cmd, a find command the router has already validated
// with the command layer's parsers. collator is the command's non-simple
// collation (nil for the simple one): the merge compares sort keys with
// it, as the shards sort with it.
func SplitFind(cmd bson.D, collator query.Collator) (*FindSplit, error) {
	args, err := readFindArgs(cmd)
	if err != nil {
		return nil, err
	}
	fs := &FindSplit{skip: args.skip, limit: args.limit}
	if err := fs.setSort(args.sort, collator); err != nil {
		return nil, err
	}
	shardLimit, err := shardFindLimit(args)
	if err != nil {
		return nil, err
	}
	shardProj, routerProj := splitProjection(args.projection, sortTopFields(fs.sort, args.sort))
	if routerProj != nil {
		if err := fs.setRouterProjection(routerProj, args.filter); err != nil {
			return nil, err
		}
	}
	fs.ShardCommand = shardFindCommand(cmd, shardLimit, shardProj)
	return fs, nil
}

// findArgs are the fields of a find command the split reads.
type findArgs struct {
	filter, sort, projection bson.D
	skip, limit              int64
	hasLimit                 bool
}

func readFindArgs(cmd bson.D) (findArgs, error) {
	var args findArgs
	for _, e := range cmd {
		var err error
		switch e.Key {
		case "filter":
			args.filter, err = docArg(e)
		case "sort":
			args.sort, err = docArg(e)
		case "projection":
			args.projection, err = docArg(e)
		case "skip":
			args.skip, err = intArg(e)
		case "limit":
			args.limit, err = intArg(e)
			args.hasLimit = args.limit != 0
		}
		if err != nil {
			return findArgs{}, err
		}
	}
	return args, nil
}

// docArg and intArg read a field as the command layer's find parser
// does, with its errors (the router has normally run that parser first).
func docArg(e bson.E) (bson.D, error) {
	if e.Value == nil {
		return nil, nil
	}
	d, ok := e.Value.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field 'find.%s' is the wrong type '%s', expected type 'object'",
			e.Key, bsonutil.TypeName(e.Value))
	}
	return d, nil
}

func intArg(e bson.E) (int64, error) {
	if e.Value == nil {
		return 0, nil
	}
	if !bsonutil.IsNumber(e.Value) {
		return 0, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field 'find.%s' is the wrong type '%s', expected types '[long, int, decimal, double]'",
			e.Key, bsonutil.TypeName(e.Value))
	}
	if f := bsonutil.ToFloat(e.Value); f != math.Trunc(f) {
		return 0, mongoerr.Newf(mongoerr.Location51024, "BSON field '%s' value must be an integer, actual value '%s'", e.Key, bsonutil.Format(e.Value))
	}
	n := signedInt64(e.Value)
	if n < 0 {
		return 0, mongoerr.Newf(mongoerr.Location51024, "BSON field '%s' value must be >= 0, actual value '%d'", e.Key, n)
	}
	return n, nil
}

// setSort keeps the sort the merge orders by; {$natural: ±1} is a scan
// hint, which mongod's router does not merge by.
func (fs *FindSplit) setSort(spec bson.D, collator query.Collator) error {
	if len(spec) == 0 {
		return nil
	}
	s, err := query.NewSort(spec)
	if err != nil {
		return fmt.Errorf("sort of the find to split: %w", err)
	}
	if s.Natural() != 0 || s.IsEmpty() {
		return nil
	}
	if collator != nil {
		s = s.WithCollation(collator)
	}
	fs.sort = s
	return nil
}

// shardFindLimit is the limit each shard applies: skip+limit, because the
// router skips over the merged results (mongod: 15 Overflow when the sum
// does not fit).
func shardFindLimit(args findArgs) (int64, error) {
	if !args.hasLimit {
		return 0, nil
	}
	if args.limit > math.MaxInt64-args.skip {
		return 0, mongoerr.Newf(mongoerr.Overflow,
			"sum of limit and skip cannot be represented as a 64-bit integer, limit: %d, skip: %d", args.limit, args.skip)
	}
	return args.limit + args.skip, nil
}

// shardFindCommand rewrites cmd's skip, limit, singleBatch and projection
// for the shards; every other field passes through.
func shardFindCommand(cmd bson.D, limit int64, projection bson.D) bson.D {
	out := make(bson.D, 0, len(cmd)+1)
	for _, e := range cmd {
		switch e.Key {
		case "skip", "limit", "projection":
			continue
		case "singleBatch":
			e.Value = false
		}
		out = append(out, e)
	}
	if projection != nil {
		out = append(out, bson.E{Key: "projection", Value: projection})
	}
	if limit > 0 {
		out = append(out, bson.E{Key: "limit", Value: limit})
	}
	return out
}

func (fs *FindSplit) setRouterProjection(spec, filter bson.D) error {
	p, err := query.NewProjection(spec)
	if err != nil {
		return fmt.Errorf("projection of the find to split: %w", err)
	}
	fs.project = p
	if hasPositional(spec) {
		f, err := query.NewFilter(filter)
		if err != nil {
			return fmt.Errorf("filter of the find to split: %w", err)
		}
		fs.positional = f
	}
	return nil
}

// Merge merges the shards' result streams: merge-sorted when the find is
// sorted, else one shard after another; then the router's skip, limit
// and, when the shards' projection kept extra fields, the user's
// projection. Closing the result closes every stream.
func (fs *FindSplit) Merge(streams []aggregate.Iterator) aggregate.Iterator {
	var out aggregate.Iterator
	if fs.sort != nil {
		out = MergeSorted(fs.sort, streams)
	} else {
		out = Concat(streams)
	}
	if fs.skip > 0 {
		out = aggregate.Skip(out, fs.skip)
	}
	if fs.limit > 0 {
		out = aggregate.Limit(out, fs.limit)
	}
	if fs.project != nil {
		out = &projectIter{in: out, project: fs.project, positional: fs.positional}
	}
	return out
}

// projectIter applies the user's projection on the router.
type projectIter struct {
	in         aggregate.Iterator
	project    *query.Projection
	positional *query.Filter
}

func (p *projectIter) Next() (bson.D, bool, error) {
	doc, ok, err := p.in.Next()
	if err != nil || !ok {
		return nil, false, err
	}
	pos := -1
	if p.positional != nil {
		_, pos = p.positional.MatchPositional(doc)
	}
	out, err := p.project.Apply(doc, pos)
	if err != nil {
		return nil, false, fmt.Errorf("projecting a merged find result: %w", err)
	}
	return out, true, nil
}

func (p *projectIter) Close() error { return p.in.Close() }
