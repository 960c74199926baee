package router

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmerge"
)

// opTarget is where one op of a bulkWrite goes this round.
type opTarget struct {
	ns      string
	targets []target // the shards it is sent to, with their versions
	alone   bool     // it runs alone as an update or delete command
	err     error    // it cannot be targeted: its result is this error
	stale   bool     // the router's routing table is old: refresh first
}

// shardBatch is the ops (client indexes) one shard gets in one bulkWrite.
type shardBatch struct {
	at  target
	idx []int
	// versions are the routing versions of each namespace of its ops.
	versions map[string]bson.D
}

// round is what one round of sending learned.
type round struct {
	got   map[int]bson.D // results, merged over the shards an op went to
	stale map[int]bool   // ops a shard refused as stale: sent again
	alone []int          // ops that run alone after the batches
}

// run sends the ops round by round until each has a result (or, ordered,
// one failed). A round that only met stale shards counts towards
// mongos's limit of refreshes; one that finished an op starts it again.
func (b *bulkRoute) run() error {
	for fruitless := 0; ; {
		pending := b.pending()
		if len(pending) == 0 {
			return nil
		}
		if fruitless == maxStaleRetries {
			b.giveUp(pending)
			return nil
		}
		before := len(b.items)
		if err := b.round(pending); err != nil {
			return err
		}
		if len(b.items) == before {
			fruitless++
		} else {
			fruitless = 0
		}
	}
}

// pending are the ops still to run, in order: none once an ordered
// bulkWrite has failed.
func (b *bulkRoute) pending() []int {
	var out []int
	for i := range b.ops {
		item, done := b.items[i]
		if done && b.ordered && !shardmerge.BulkItemOK(item) {
			return nil
		}
		if !done {
			out = append(out, i)
		}
	}
	return out
}

// giveUp fails the ops still stale after maxStaleRetries refreshes (the
// first only, ordered: the rest never ran).
func (b *bulkRoute) giveUp(pending []int) {
	if b.ordered {
		pending = pending[:1]
	}
	for _, i := range pending {
		ns, _ := b.namespaceOf(i)
		b.failed(i, mongoerr.Newf(mongoerr.StaleConfig, "routing information for %s is still stale after %d refreshes", ns, maxStaleRetries))
	}
}

// round targets the pending ops, sends the shards their batches (all at
// once), then runs the ops that go alone, and keeps each finished op's
// result.
func (b *bulkRoute) round(pending []int) error {
	batches, alone, err := b.plan(pending)
	if err != nil {
		return err
	}
	replies := make([]bson.D, len(batches))
	err = b.r.fanOut(b.op, len(batches), func(sub *operation, i int) error {
		var err error
		replies[i], err = b.r.call(sub, batches[i].at.rs, "admin", b.subCommand(batches[i]))
		return err
	})
	if err != nil {
		return err
	}
	rd := &round{got: map[int]bson.D{}, stale: map[int]bool{}, alone: alone}
	for i, batch := range batches {
		b.take(batch, replies[i], rd)
	}
	for i, item := range rd.got {
		if !rd.stale[i] {
			b.items[i] = item
		}
	}
	for i := range rd.stale {
		ns, _ := b.namespaceOf(i)
		b.r.catalog.invalidate(ns)
	}
	return b.runAlone(rd.alone)
}

// plan targets the pending ops and groups them by shard: ordered, one
// run of consecutive ops bound for the same single shard (or one op
// alone, or one op sent to several shards); unordered, every op.
func (b *bulkRoute) plan(pending []int) ([]*shardBatch, []int, error) {
	var batches []*shardBatch
	byShard := map[string]*shardBatch{}
	var alone []int
	for n, i := range pending {
		t, err := b.target(i)
		if err != nil {
			return nil, nil, err
		}
		if b.ordered && n > 0 && !b.extendsRun(batches, alone, t) {
			break
		}
		switch {
		case t.stale: // targeted again next round
			b.r.catalog.invalidate(t.ns)
			if b.ordered {
				return batches, alone, nil
			}
			continue
		case t.err != nil:
			b.failed(i, t.err)
		case t.alone:
			alone = append(alone, i)
		default:
			batches = addToBatches(batches, byShard, t, i)
		}
		if b.ordered && (t.err != nil || t.alone || len(t.targets) > 1) {
			break
		}
	}
	return batches, alone, nil
}

// extendsRun reports whether an ordered run so far (one batch for one
// shard) may take an op targeted at t: the same single shard.
func (b *bulkRoute) extendsRun(batches []*shardBatch, alone []int, t opTarget) bool {
	if len(alone) > 0 || len(batches) != 1 || t.err != nil || t.alone || t.stale || len(t.targets) != 1 {
		return false
	}
	return batches[0].at.shard == t.targets[0].shard
}

func addToBatches(batches []*shardBatch, byShard map[string]*shardBatch, t opTarget, i int) []*shardBatch {
	for _, at := range t.targets {
		batch, ok := byShard[at.shard]
		if !ok {
			batch = &shardBatch{at: at, versions: map[string]bson.D{}}
			byShard[at.shard] = batch
			batches = append(batches, batch)
		}
		if _, seen := batch.versions[t.ns]; !seen {
			batch.versions[t.ns] = at.version
		}
		batch.idx = append(batch.idx, i)
	}
	return batches
}

// target finds where op i goes: an insert to the shard owning its
// document, an update or delete by the rules of the update and delete
// commands (statementTargets).
func (b *bulkRoute) target(i int) (opTarget, error) {
	ns, err := b.namespaceOf(i)
	if err != nil {
		return opTarget{err: err}, nil
	}
	t := opTarget{ns: ns}
	p, err := b.r.place(b.op, ns, true)
	if err != nil {
		return t, err
	}
	if opKind(b.ops[i]) == "insert" {
		t.targets, t.err = b.insertTarget(p, b.ops[i])
	} else {
		stmt, kind := bulkStatement(b.ops[i])
		t.targets, t.err = b.r.statementTargets(b.op, p, kind, stmt)
	}
	switch {
	case errors.Is(t.err, errWithoutShardKey):
		t.alone, t.err = true, nil
	case errors.Is(t.err, errStale):
		t.stale, t.err = true, nil
	case t.err != nil && !isOpError(t.err):
		return t, t.err
	}
	return t, nil
}

// isOpError reports an error that is one op's, not the command's: one
// with a MongoDB code that routing gave it.
func isOpError(err error) bool {
	var e *mongoerr.Error
	return errors.As(err, &e)
}

// insertTarget is the shard owning an insert op's document.
func (b *bulkRoute) insertTarget(p placement, op bson.D) ([]target, error) {
	doc, ok := mustField(op, "document").(bson.D)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'bulkWrite.insert.document' is missing but a required field")
	}
	shard, err := docShard(p, doc)
	if err != nil {
		return nil, err
	}
	return b.r.resolve(b.op, p, []string{shard})
}
