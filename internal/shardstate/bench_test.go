package shardstate

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkFilterOwns is the ownership filter's cost per document read
// by a routed scan: a hash and a search over the chunks.
func BenchmarkFilterOwns(b *testing.B) {
	cfg := &fakeConfig{}
	f := NewFilter(cfg.shard(b, "db.c", "shA", "shB", "shC", "shD"), "shA")
	doc := bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "k", Value: int64(42)}, {Key: "payload", Value: "x"}}
	b.ReportAllocs()
	for b.Loop() {
		f.Owns(doc)
	}
}

// BenchmarkCheckCached is the version check of a routed command whose
// version the cache already holds: what every routed command pays.
func BenchmarkCheckCached(b *testing.B) {
	cfg := &fakeConfig{}
	s := newTestState(cfg, identityDoc("shA"))
	v := cfg.shard(b, "db.c", "shA", "shB").ShardVersion("shA")
	ctx := context.Background()
	if _, err := s.Check(ctx, "db", "db.c", Versions{Shard: &v}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Check(ctx, "db", "db.c", Versions{Shard: &v}); err != nil {
			b.Fatal(err)
		}
	}
}
