package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// cmdInsert splits a batch by the shard that owns each document's key
// (the database's primary shard for an unsharded collection) and sends
// each part with its statement ids. An ordered batch goes in runs of
// consecutive documents of one shard and stops at the first error.
func cmdInsert(r *Router, op *operation) (bson.D, error) {
	coll, err := collectionArg(op)
	if err != nil {
		return nil, err
	}
	ns := op.db + "." + coll
	docs := withIDs(bsonutil.ToA(mustField(op.body, "documents")))
	ids := statementIDs(op.body, len(docs))
	ordered := orderedArg(op.body)
	res := &writeResult{}
	pending := make([]int, len(docs))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == maxStaleRetries {
			for _, i := range pending {
				res.failed(i, mongoerr.Newf(mongoerr.StaleConfig, "routing information for %s is still stale after %d refreshes", ns, maxStaleRetries))
			}
			break
		}
		if attempt > 0 {
			r.catalog.invalidate(ns)
		}
		if pending, err = r.insertRound(op, ns, docs, ids, pending, ordered, res); err != nil {
			return nil, err
		}
	}
	return res.reply(), nil
}

// insertRound sends the pending documents once and returns those a
// shard refused as stale.
func (r *Router) insertRound(op *operation, ns string, docs, ids bson.A, pending []int, ordered bool, res *writeResult) ([]int, error) {
	p, err := r.place(op, ns, true)
	if err != nil {
		return nil, err
	}
	batches, unplaced := r.placeDocs(p, docs, pending, ordered)
	for i, err := range unplaced {
		res.failed(i, err)
	}
	if !ordered {
		return r.insertUnordered(op, p, docs, ids, batches, res)
	}
	if len(unplaced) > 0 {
		batches = before(batches, minKey(unplaced)) // an ordered batch stops at its first error
	}
	var stale []int
	for bi, b := range batches {
		reply, err := r.sendInsertBatch(op, p, docs, ids, b)
		if err != nil {
			return nil, err
		}
		again, err := takeInsertReply(reply, b, true, res)
		if err != nil {
			return nil, err
		}
		stale = append(stale, again...)
		if len(again) > 0 {
			return append(stale, laterStatements(batches[bi+1:])...), nil // they go after the refresh
		}
		if len(res.writeErrors) > len(unplaced) { // a shard stopped at an error
			break
		}
	}
	return stale, nil
}

// insertUnordered sends every shard its batch at once.
func (r *Router) insertUnordered(op *operation, p placement, docs, ids bson.A, batches []batch, res *writeResult) ([]int, error) {
	replies := make([]bson.D, len(batches))
	err := r.fanOut(op, len(batches), func(sub *operation, i int) error {
		var err error
		replies[i], err = r.sendInsertBatch(sub, p, docs, ids, batches[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	var stale []int
	for i, b := range batches {
		again, err := takeInsertReply(replies[i], b, false, res)
		if err != nil {
			return nil, err
		}
		stale = append(stale, again...)
	}
	return stale, nil
}

// sendInsertBatch sends one shard its part of the documents.
func (r *Router) sendInsertBatch(op *operation, p placement, docs, ids bson.A, b batch) (bson.D, error) {
	ts, err := r.resolve(op, p, []string{b.shard})
	if err != nil {
		return nil, err
	}
	return r.call(op, ts[0].rs, ts[0].db, append(subBatch(op.body, "documents", docs, b.idx, ids), ts[0].version...))
}

// takeInsertReply keeps a shard's answer to batch b and returns the
// statements it refused as stale.
func takeInsertReply(reply bson.D, b batch, ordered bool, res *writeResult) ([]int, error) {
	again, rest := staleIndexes(reply, b.idx, ordered)
	if rest != nil {
		if e := wireclient.MongoError(rest); e != nil {
			return nil, e
		}
		res.add(rest, b.idx)
	}
	return again, nil
}

// laterStatements are the statements of batches, in order.
func laterStatements(batches []batch) []int {
	var idx []int
	for _, b := range batches {
		idx = append(idx, b.idx...)
	}
	return idx
}

// batch is statements (client indexes) bound for one shard.
type batch struct {
	shard string
	idx   []int
}

// placeDocs groups documents by owning shard: runs of consecutive
// documents when ordered, one batch per shard otherwise. A document whose
// key cannot be read is an error of its own.
func (r *Router) placeDocs(p placement, docs bson.A, pending []int, ordered bool) ([]batch, map[int]error) {
	var batches []batch
	byShard := map[string]int{}
	unplaced := map[int]error{}
	for _, i := range pending {
		shard, err := docShard(p, bsonutil.ToD(docs[i]))
		if err != nil {
			unplaced[i] = err
			continue
		}
		if ordered {
			if n := len(batches); n > 0 && batches[n-1].shard == shard {
				batches[n-1].idx = append(batches[n-1].idx, i)
			} else {
				batches = append(batches, batch{shard: shard, idx: []int{i}})
			}
			continue
		}
		at, ok := byShard[shard]
		if !ok {
			at = len(batches)
			byShard[shard] = at
			batches = append(batches, batch{shard: shard})
		}
		batches[at].idx = append(batches[at].idx, i)
	}
	return batches, unplaced
}

// docShard is the shard that owns a document.
func docShard(p placement, doc bson.D) (string, error) {
	if p.table == nil {
		return p.db.Primary, nil
	}
	h, err := p.table.Pattern().HashOf(doc)
	if err != nil {
		return "", err
	}
	c, ok := p.table.ChunkForHash(h)
	if !ok {
		return "", mongoerr.Newf(mongoerr.InvalidOptions, "shard key %s is not a single hashed field", p.table.Pattern())
	}
	return c.Shard, nil
}

// withIDs gives each document without an _id a new ObjectId first, as
// mongos does: the shard key may be _id, and it must be known to place
// the document.
func withIDs(docs bson.A) bson.A {
	out := make(bson.A, len(docs))
	for i, raw := range docs {
		d := bsonutil.ToD(raw)
		if _, ok := bsonutil.Field(d, "_id"); !ok {
			d = append(bson.D{{Key: "_id", Value: bson.NewObjectID()}}, d...)
		}
		out[i] = d
	}
	return out
}

// before keeps the statements of batches that come before index stop.
func before(batches []batch, stop int) []batch {
	var out []batch
	for _, b := range batches {
		var idx []int
		for _, i := range b.idx {
			if i < stop {
				idx = append(idx, i)
			}
		}
		if len(idx) > 0 {
			out = append(out, batch{shard: b.shard, idx: idx})
		}
	}
	return out
}

func minKey(m map[int]error) int {
	low := -1
	for i := range m {
		if low < 0 || i < low {
			low = i
		}
	}
	return low
}
