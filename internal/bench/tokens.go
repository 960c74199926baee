package bench

import (
	"encoding/binary"
	"encoding/hex"
)

// mix64 is SplitMix64's finalizer. It is a bijection on uint64, so
// distinct session numbers always give distinct tokens.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// token is session number i's token: 32 hex digits that look random.
func token(i uint64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], mix64(i))
	binary.BigEndian.PutUint64(b[8:], mix64(^i))
	return hex.EncodeToString(b[:])
}

// userID is the user a session number belongs to.
func userID(i uint64) int64 { return int64(mix64(i^0x5bd1e995) % 10_000_000) }

// redisKey is the Redis key of a session token.
func redisKey(tok string) string { return "session:" + tok }

// loginBase is the first session number a run's logins use, far above any
// preloaded number, and distinct per run so that runs on one server never
// collide.
func loginBase(runID int) uint64 { return uint64(runID+1) << 40 }
