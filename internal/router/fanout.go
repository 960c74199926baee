package router

import (
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// fanOut runs send for each of n shards at once and waits for them all,
// so that a command sent to several shards takes as long as the slowest
// of them, not the sum (mongos sends a scattered command's requests
// together too). Each send gets its own copy of op, since sends record
// the operation time of their replies; op keeps the latest of them.
// The error is the first, in shard order.
func (r *Router) fanOut(op *operation, n int, send func(sub *operation, i int) error) error {
	if n == 1 {
		return send(op, 0)
	}
	subs := make([]operation, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		subs[i] = *op
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = send(&subs[i], i)
		}()
	}
	wg.Wait()
	for i := range subs {
		if op.opTime.Compare(subs[i].opTime) < 0 {
			op.opTime = subs[i].opTime
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// eachShard sends cmd to every shard's primary at once, on db, and
// answers with the shards (by id) and their replies in that order; a
// reply's error is the error.
func (r *Router) eachShard(op *operation, db string, cmd bson.D) ([]shardmeta.Shard, []bson.D, error) {
	shards, err := r.catalog.shardDocs(op)
	if err != nil {
		return nil, nil, err
	}
	replies := make([]bson.D, len(shards))
	err = r.fanOut(op, len(shards), func(sub *operation, i int) error {
		rs, err := r.catalog.shard(sub, shards[i].ID)
		if err != nil {
			return err
		}
		if replies[i], err = r.call(sub, rs, db, append(bson.D(nil), cmd...)); err != nil {
			return err
		}
		return wireclient.MongoError(replies[i])
	})
	return shards, replies, err
}
