package bench

import (
	"context"
	"time"
)

// sessionTTL is how long an untouched session lives, in both databases.
const sessionTTL = 30 * time.Minute

// Names of what the bench creates on Mayfly.
const (
	benchDB      = "bench"
	sessionsColl = "sessions"
	stormColl    = "storm"
	burstColl    = "burst"
)

// sessionStore is the session workload's four operations on one database.
// The found/matched results let the workload count misses.
type sessionStore interface {
	// touch refreshes a session's expiry.
	touch(ctx context.Context, tok string, now time.Time) (bool, error)
	// verify reads a session back.
	verify(ctx context.Context, tok string) (bool, error)
	// login stores a new session.
	login(ctx context.Context, tok string, user int64, now time.Time) error
	// logout removes a session.
	logout(ctx context.Context, tok string) (bool, error)
	close(ctx context.Context) error
}

// newStore connects to the target of a job.
func newStore(ctx context.Context, target, addr string, pool int) (sessionStore, error) {
	if target == targetRedis {
		return newRedisStore(ctx, addr, pool)
	}
	return newMongoStore(ctx, addr, pool)
}
