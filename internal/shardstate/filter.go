package shardstate

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// Filter is a sharded collection's ownership filter on one shard, as of
// the routing table it was made from: a router's read sees only the
// documents whose shard key falls in a chunk this shard owns, so that an
// orphan (a copy another shard owns) is never returned twice.
type Filter struct {
	table *shardmeta.RoutingTable
	shard string
}

// NewFilter returns shard's ownership filter over table.
func NewFilter(table *shardmeta.RoutingTable, shard string) *Filter {
	return &Filter{table: table, shard: shard}
}

// Owns reports whether doc's shard key falls in one of the shard's
// chunks. A document whose key cannot be extracted (an array on the
// key's path, which a sharded insert refuses) belongs to no chunk and is
// kept: hiding it would make it unreachable from every router.
func (f *Filter) Owns(doc bson.D) bool {
	p := f.table.Pattern()
	if p.IsSingleHashed() {
		h, err := p.HashOf(doc)
		if err != nil {
			return true
		}
		c, _ := f.table.ChunkForHash(h)
		return c.Shard == f.shard
	}
	key, err := p.Extract(doc)
	if err != nil {
		return true
	}
	return f.table.ChunkFor(key).Shard == f.shard
}
