package shardstate

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/shardkey"
)

// boundKey is doc's shard key in config.chunks' bound form: the hash for
// a single hashed field, else the extracted key. ok is false for a
// document whose key cannot be taken (an array on its path).
func boundKey(p *shardkey.Pattern, doc bson.D) (bson.D, bool) {
	if field, hashed := p.HashedField(); hashed && p.IsSingleHashed() {
		h, err := p.HashOf(doc)
		if err != nil {
			return nil, false
		}
		return bson.D{{Key: field, Value: h}}, true
	}
	key, err := p.Extract(doc)
	return key, err == nil
}

// inRange reports whether doc's shard key falls in r.
func inRange(p *shardkey.Pattern, r migrate.Range, doc bson.D) bool {
	key, ok := boundKey(p, doc)
	return ok && r.Contains(key)
}
