package shardstate

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/shardkey"
)

// inRange reports whether doc's shard key falls in r.
func inRange(p *shardkey.Pattern, r migrate.Range, doc bson.D) bool {
	key, err := p.Bound(doc)
	return err == nil && r.Contains(key)
}
