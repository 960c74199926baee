package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/migrate"
)

// TestMigrationBackBeforeRangeDeletion: a chunk moves from A to B and at
// once back to A, while A's range deletion of its old copy is still
// waiting for orphanCleanupDelaySecs. The move back is held in catch-up
// until that deletion is due; the documents A cloned back must survive
// it (TestMigrationJepsen found them deleted, then lost at the commit).
func TestMigrationBackBeforeRangeDeletion(t *testing.T) {
	c := startMigrationCluster(t)
	cl := c.client()
	coll := shardHashed(t, cl, "back", 300)
	ch := chunkOf(t, cl, "test.back", 0)
	a, b := ch.Shard, otherShard(ch.Shard)
	runCmd(t, cl.Database("admin"), bson.D{{Key: "moveChunk", Value: "test.back"},
		{Key: "bounds", Value: bson.A{ch.Min, ch.Max}}, {Key: "to", Value: b}})
	failPoint(t, c, b, failpoint.MigrationHangInCatchUp, true)
	moved := moveAsync(cl, "test.back", a)
	waitPhase(t, c, b, migrate.PhaseCatchUp)
	time.Sleep(2500 * time.Millisecond) // A's deletion task (1 s delay) is due and the range deleter has run
	failPoint(t, c, b, failpoint.MigrationHangInCatchUp, false)
	if err := <-moved; err != nil {
		t.Fatalf("moveChunk back to %s: %v", a, err)
	}
	if got := chunkOf(t, cl, "test.back", 0).Shard; got != a {
		t.Fatalf("after the move back the chunk is on %s, want %s", got, a)
	}
	if seen := readOnce(t, coll); len(seen) != 300 {
		t.Fatalf("read %d documents back after moving the chunk there and back, want 300", len(seen))
	}
	waitStoredTotal(t, c, "back", 300)
}
