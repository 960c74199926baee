package shardstate

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/shardkey"
)

// scanBatch bounds the documents one iterator of a collection scan reads
// before the next one goes on after the last: a scan that writes as it
// goes (the range deleter) holds no iterator long.
const scanBatch = 4096

// eachInRange calls visit with every live document of r, and possibly
// others (visit tests each against r): through an index on the shard
// key when the collection has one that can answer, which reads the range
// alone, else through the whole collection in _id order. Reading the
// collection cost a move or a range deletion the shard's every document
// for a chunk's few.
func eachInRange(ctx context.Context, coll *docstore.Collection, p *shardkey.Pattern, r migrate.Range, visit func(bson.D) error) error {
	if it, ok := coll.ScanKeyRange(p.Spec(), boundValues(r.Min), boundValues(r.Max)); ok {
		defer it.Close()
		_, err := visitEach(ctx, coll, it, 0, visit)
		return err
	}
	var after any
	hasAfter := false
	for {
		it := coll.ScanAfter(after, hasAfter, nil)
		last, err := visitEach(ctx, coll, it, scanBatch, visit)
		it.Close()
		if err != nil || last == nil {
			return err
		}
		after, hasAfter = last, true
	}
}

// visitEach calls visit with each document of it, at most limit (0: no
// limit); last is the _id of the last one visited when it stopped at
// limit, nil at the iterator's end.
func visitEach(ctx context.Context, coll *docstore.Collection, it *docstore.DocIter, limit int, visit func(bson.D) error) (last any, err error) {
	for n := 0; limit == 0 || n < limit; n++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		doc, ok, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("shardstate: scan %s: %w", coll.Namespace(), err)
		}
		if !ok {
			return nil, nil
		}
		if err := visit(doc); err != nil {
			return nil, err
		}
		if n == limit-1 {
			return mustID(doc), nil
		}
	}
	return nil, nil
}

func boundValues(bound bson.D) []any {
	out := make([]any, len(bound))
	for i, e := range bound {
		out[i] = e.Value
	}
	return out
}
