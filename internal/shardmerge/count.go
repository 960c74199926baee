package shardmerge

import (
	"math"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// ShardCount is one shard's answer to a count.
type ShardCount struct {
	Shard string
	N     int64
}

// ShardCountCommand is the count command each of several shards runs:
// skip removed (the router applies it to the total), and a limit raised
// by the skip so that every document the router may count is counted.
// mongod's router adds the signed limit to the skip; the magnitude is
// added here, so a negative limit counts what an unsharded count does.
func ShardCountCommand(cmd bson.D) (bson.D, error) {
	skip, limit := countSkipLimit(cmd)
	out := make(bson.D, 0, len(cmd))
	for _, e := range cmd {
		switch e.Key {
		case "skip":
			continue
		case "limit":
			if skip == 0 || limit == 0 {
				break
			}
			if limit > math.MaxInt64-skip {
				return nil, mongoerr.Newf(mongoerr.Overflow,
					"Overflow on the count command: The sum of the limit and skip fields must fit into a long integer. Limit: %d   Skip: %d", limit, skip)
			}
			e.Value = limit + skip
		}
		out = append(out, e)
	}
	return out, nil
}

// MergeCount is the count of a command whose shards answered counts:
// the total less the skip (not below 0), then at most |limit| (0: no
// limit), as mongod's router applies them.
func MergeCount(cmd bson.D, counts []ShardCount) int64 {
	skip, limit := countSkipLimit(cmd)
	var total int64
	for _, c := range counts {
		total += c.N
	}
	total = max(total-skip, 0)
	if limit != 0 {
		total = min(total, limit)
	}
	return total
}

// CountReply is the router's reply to a count: n, and each shard's own
// count under "shards", as mongod's router answers.
func CountReply(n int64, counts []ShardCount) bson.D {
	shards := make(bson.D, 0, len(counts))
	for _, c := range counts {
		shards = append(shards, bson.E{Key: c.Shard, Value: c.N})
	}
	return bson.D{{Key: "n", Value: n}, {Key: "shards", Value: shards}, {Key: "ok", Value: 1.0}}
}

// countSkipLimit reads a count's skip (0 when absent or negative) and
// the magnitude of its limit (0: none).
func countSkipLimit(cmd bson.D) (skip, limit int64) {
	for _, e := range cmd {
		if !bsonutil.IsNumber(e.Value) {
			continue
		}
		switch e.Key {
		case "skip":
			skip, _ = count64(e.Value)
		case "limit":
			limit = signedInt64(e.Value)
		}
	}
	if limit < 0 { // a negative limit counts as its magnitude
		limit = -max(limit, -math.MaxInt64)
	}
	return max(skip, 0), limit
}

// signedInt64 reads a validated integral number, int64 exactly.
func signedInt64(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int32:
		return int64(n)
	}
	f := bsonutil.ToFloat(v)
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// MergeDistinct unions the shards' distinct values: values equal under
// MongoDB's comparison (and the collation, nil for the simple one) count
// once, the first shard's copy kept, in ascending order, as mongod's
// router returns them from its ordered set.
func MergeDistinct(perShard []bson.A, collator query.Collator) bson.A {
	type keyed struct {
		key, value any
	}
	var all []keyed
	for _, values := range perShard {
		for _, v := range values {
			key := v
			if collator != nil {
				key = collator.Value(v)
			}
			all = append(all, keyed{key: key, value: v})
		}
	}
	slices.SortStableFunc(all, func(a, b keyed) int { return bsonutil.Compare(a.key, b.key) })
	out := bson.A{}
	for i, k := range all {
		if i > 0 && bsonutil.Compare(all[i-1].key, k.key) == 0 {
			continue
		}
		out = append(out, k.value)
	}
	return out
}
