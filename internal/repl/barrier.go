package repl

import "context"

// Barrier waits until every client write proposed on this member before
// it is applied here (or refused): a no-op entry through the log, which
// raft orders after them. Background proposals (compact expiries) still
// queued go to raft after it, so a caller that needs those applied too
// waits for them itself (docstore's SettleExpiries). A command whose
// wait for its own write gave up (its client went away) may leave that
// write to apply later; a chunk migration's critical section passes the
// barrier before its last pull, so that no such write lands on the
// donor after it.
func (rs *Replica) Barrier(ctx context.Context) error {
	return rs.propose(ctx, &entry{kind: kindNoop})
}
