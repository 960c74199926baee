package shardkey

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Bound is a document's (or an equality query's) shard key in the form
// config.chunks' bounds take: for a key of one hashed field, that field
// and the hash; otherwise the extracted key (Extract).
func (p *Pattern) Bound(doc bson.D) (bson.D, error) {
	if field, hashed := p.HashedField(); hashed && p.IsSingleHashed() {
		h, err := p.HashOf(doc)
		if err != nil {
			return nil, err
		}
		return bson.D{{Key: field, Value: h}}, nil
	}
	return p.Extract(doc)
}
