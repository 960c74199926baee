package shardstate

import (
	"context"
	"testing"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// TestStateLearnsOfADropFromTheConfigServers: a router that sends
// UNSHARDED for a collection the cache holds sharded may have seen it
// dropped, so the shard reads the config servers once. Dropped there, the
// command runs unsharded; still sharded there (a stale router), it gets
// mongod's StaleConfig, and each such command reads again.
func TestStateLearnsOfADropFromTheConfigServers(t *testing.T) {
	cfg, s, v := primedState(t, "shA", "shB")
	unsharded := shardmeta.Unsharded
	before := cfg.reads.Load()
	_, err := s.Check(context.Background(), "db", "db.c", Versions{Shard: &unsharded})
	if e := mongoerr.As(err); e == nil || e.Code != mongoerr.StaleConfig || e.Msg != "timestamp mismatch detected for db.c" {
		t.Fatalf("UNSHARDED while sharded: %v", err)
	}
	if got := cfg.reads.Load() - before; got != 1 {
		t.Fatalf("%d config reads, want 1", got)
	}
	cfg.mu.Lock()
	cfg.coll, cfg.chunks = nil, nil // the router's drop
	cfg.mu.Unlock()
	filter, err := s.Check(context.Background(), "db", "db.c", Versions{Shard: &unsharded})
	if err != nil || filter != nil {
		t.Fatalf("UNSHARDED after the drop: filter %v, %v", filter, err)
	}
	if _, err := s.Check(context.Background(), "db", "db.c", Versions{Shard: &v}); mongoerr.As(err) == nil || mongoerr.As(err).Code != mongoerr.StaleConfig {
		t.Fatalf("the dropped incarnation's version: %v, want StaleConfig", err)
	}
}
