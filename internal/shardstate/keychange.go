package shardstate

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// KeyChanged reports whether an update changes a document's shard key
// value (mongod's UpdateStage::checkUpdateChangesShardKeyFields). A key
// that cannot be extracted on either side counts as changed: the write
// then goes through the checks that keep it on its owner.
func (f *Filter) KeyChanged(before, after bson.D) bool {
	p := f.table.Pattern()
	old, errOld := p.Extract(before)
	next, errNext := p.Extract(after)
	if errOld != nil || errNext != nil {
		return true
	}
	return bsonutil.Compare(old, next) != 0
}
