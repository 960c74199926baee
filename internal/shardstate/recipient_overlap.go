package shardstate

import (
	"context"
	"fmt"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// overlapWait bounds how long a recipient waits for an overlapping range
// deletion before it gives the migration up, as mongod's
// receiveChunkWaitForRangeDeleterTimeoutMS (10 s) does.
const overlapWait = 10 * time.Second

// waitOverlappingDeletions holds a recipient's clone until no range
// deletion task of this shard overlaps the incoming range. The range
// deleter removes what this shard does not own by the config servers'
// chunks, and documents being cloned in are not owned until the commit:
// a task left by an earlier migration of the range away from this shard
// would delete them, and the commit would then lose them.
func (m *Migrations) waitOverlappingDeletions(ctx context.Context, req RecvRequest) error {
	deadline := m.opts.Clock.Now().Add(overlapWait)
	for {
		tasks, err := m.rangeDeletions()
		if err != nil {
			return fmt.Errorf("shardstate: read range deletions: %w", err)
		}
		if !overlapsOther(tasks, req) {
			return nil
		}
		if !m.opts.Clock.Now().Before(deadline) {
			return mongoerr.New(mongoerr.ConflictingOperationInProgress, fmt.Sprintf(
				"Migration aborted because the requested range %v overlaps with a range already scheduled for deletion", req.Range))
		}
		if !clock.Sleep(ctx, m.opts.Clock, backgroundPeriod) {
			return ctx.Err()
		}
	}
}

// overlapsOther reports whether a task of req's collection, other than
// req's own, overlaps req's range.
func overlapsOther(tasks []migrate.RangeDeletion, req RecvRequest) bool {
	own := migrate.RecipientTaskID(req.MigrationID)
	for _, t := range tasks {
		if t.ID != own && t.Namespace == req.Namespace && t.Range.Overlaps(req.Range) {
			return true
		}
	}
	return false
}
