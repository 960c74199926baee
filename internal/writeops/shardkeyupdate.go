package writeops

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// ShardKeyGuard holds a shard's rules for updates that change a
// document's shard key, for a command a router sent with a shard version.
type ShardKeyGuard struct {
	// Changed reports whether an update changes the shard key value.
	Changed func(before, after bson.D) bool
	// Owns reports whether this shard owns a document's shard key.
	Owns func(doc bson.D) bool
	// Retryable: the command is a retryable write (it has a txnNumber).
	Retryable bool
}

type shardKeyGuardKey struct{}

// WithShardKeyGuard returns a context under which updates check g.
func WithShardKeyGuard(ctx context.Context, g ShardKeyGuard) context.Context {
	return context.WithValue(ctx, shardKeyGuardKey{}, g)
}

// checkShardKeyUpdate applies mongod's rules (update_stage.cpp) to an
// update of before into after: a change of the shard key value is
// refused in a multi-update (72) and outside a retryable write (20); one
// that would move the document to another shard's chunk is not written
// here but answered WouldChangeOwningShard (283) with both images, which
// the router turns into a delete on this shard and an insert on the
// owner.
func (o Op) checkShardKeyUpdate(before, after bson.D, multi bool) error {
	if o.Ctx == nil {
		return nil
	}
	g, ok := o.Ctx.Value(shardKeyGuardKey{}).(ShardKeyGuard)
	if !ok || before == nil || after == nil || !g.Changed(before, after) {
		return nil
	}
	if multi {
		return mongoerr.New(mongoerr.InvalidOptions, "Multi-update operations are not allowed when updating the shard key field.")
	}
	if !g.Retryable {
		return mongoerr.New(mongoerr.IllegalOperation, "Must run update to shard key field in a multi-statement transaction or with retryWrites: true.")
	}
	if g.Owns(after) {
		return nil
	}
	err := mongoerr.New(mongoerr.WouldChangeOwningShard, "This update would cause the doc to change owning shards")
	err.Extra = []mongoerr.KV{{Key: "preImage", Value: before}, {Key: "postImage", Value: after}, {Key: "shouldUpsert", Value: false}}
	return err
}

// checkShardKeyUpsert refuses to insert here an upsert's document whose
// shard key another shard owns (the update set the key elsewhere than
// the filter did): outside a retryable write with 20, as mongod, else
// with 283 and shouldUpsert, for the router to insert it on the owner.
func (o Op) checkShardKeyUpsert(doc bson.D) error {
	if o.Ctx == nil {
		return nil
	}
	g, ok := o.Ctx.Value(shardKeyGuardKey{}).(ShardKeyGuard)
	if !ok || g.Owns(doc) {
		return nil
	}
	if !g.Retryable {
		return mongoerr.New(mongoerr.IllegalOperation, "Must run update to shard key field in a multi-statement transaction or with retryWrites: true.")
	}
	err := mongoerr.New(mongoerr.WouldChangeOwningShard, "This update would cause the doc to change owning shards")
	err.Extra = []mongoerr.KV{{Key: "preImage", Value: bson.D{}}, {Key: "postImage", Value: doc}, {Key: "shouldUpsert", Value: true}}
	return err
}
