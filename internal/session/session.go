// Package session keeps logical sessions and the records that make
// retryable writes answer once.
package session

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The logical session cache. As mongod does, the server remembers each
// session a command names in its lsid, with the session's user and last
// use; $listLocalSessions lists them. endSessions forgets sessions,
// refreshSessions renews them, and a session unused for
// localLogicalSessionTimeoutMinutes (30) is gone. (mongod also writes the
// cache to config.system.sessions; Mayfly keeps it in memory only.)

// TimeoutMinutes is mongod's localLogicalSessionTimeoutMinutes.
const TimeoutMinutes = 30

// Lifetime is how long a session, and its retryable-write records,
// outlive its last use; it also bounds how long a driver may retry.
const Lifetime = TimeoutMinutes * time.Minute

// MaxSessions is mongod's maxSessions default: past it, a command naming
// a new session fails, so that clients inventing session ids cannot grow
// the cache without bound.
const MaxSessions = 1_000_000

// ErrFull is Touch's refusal of a new session when the cache holds its
// limit of live ones.
var ErrFull = errors.New("session: too many active sessions")

// Cache is the logical session cache.
type Cache struct {
	mu    sync.Mutex
	m     map[string]*record
	limit int
	// digests remembers the uids of the users seen last: every command
	// of a session touches it, and hashing the user each time was half
	// of the touch.
	digests map[string][sha256.Size]byte
}

// maxDigests bounds Cache.digests; past it the map starts again.
const maxDigests = 64

// record is one session: its id, its user's digest (uid) and name
// ("" without authentication), and when it was last used.
type record struct {
	id      []byte
	uid     []byte
	user    string
	lastUse time.Time
}

// NewCache returns an empty cache that holds at most limit sessions.
func NewCache(limit int) *Cache {
	return &Cache{m: map[string]*record{}, limit: limit, digests: map[string][sha256.Size]byte{}}
}

// UserDigest is mongod's session uid: the SHA-256 of "user@db", or of
// nothing without authentication.
func UserDigest(user string) []byte {
	sum := sha256.Sum256([]byte(user))
	return sum[:]
}

func (s *record) key() string { return string(s.id) + string(s.uid) }

// Touch records that user used the session id at now. A new session
// past the limit first sweeps out expired ones, then fails with ErrFull
// as mongod's cache does when still full.
//
// A known session, every request of a client after its first, is
// renewed in place: records are only read under c.mu (List copies them).
func (c *Cache) Touch(id []byte, user string, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	uid := c.digestLocked(user)
	var buf [64]byte
	key := append(append(buf[:0], id...), uid[:]...)
	if rec, known := c.m[string(key)]; known { // no allocation for the lookup
		rec.lastUse = now
		return nil
	}
	rec := &record{id: id, uid: bytes.Clone(uid[:]), user: user, lastUse: now}
	if len(c.m) >= c.limit {
		c.sweep(now)
		if len(c.m) >= c.limit {
			return ErrFull
		}
	}
	c.m[rec.key()] = rec
	return nil
}

// digestLocked is UserDigest of user, remembered; c.mu is held.
func (c *Cache) digestLocked(user string) [sha256.Size]byte {
	if uid, ok := c.digests[user]; ok {
		return uid
	}
	if len(c.digests) >= maxDigests {
		clear(c.digests)
	}
	uid := sha256.Sum256([]byte(user))
	c.digests[user] = uid
	return uid
}

// sweep forgets the sessions unused for Lifetime; c.mu is held.
func (c *Cache) sweep(now time.Time) {
	for k, rec := range c.m {
		if now.Sub(rec.lastUse) > Lifetime {
			delete(c.m, k)
		}
	}
}

// End forgets user's session id.
func (c *Cache) End(id []byte, user string) {
	rec := record{id: id, uid: UserDigest(user)}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, rec.key())
}

// List returns the live sessions whose uid is in uids (nil: all), oldest
// use first, as $listLocalSessions shows them, and forgets the expired
// ones.
func (c *Cache) List(uids [][]byte, now time.Time) []bson.D {
	c.mu.Lock()
	c.sweep(now)
	var recs []*record
	for _, rec := range c.m {
		if uids == nil || slices.ContainsFunc(uids, func(u []byte) bool { return bytes.Equal(u, rec.uid) }) {
			copied := *rec
			recs = append(recs, &copied)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(recs, func(a, b *record) int { return a.lastUse.Compare(b.lastUse) })
	out := make([]bson.D, len(recs))
	for i, rec := range recs {
		out[i] = rec.doc()
	}
	return out
}

// doc is the record as $listLocalSessions shows it.
func (s *record) doc() bson.D {
	d := bson.D{
		{Key: "_id", Value: bson.D{
			{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: s.id}},
			{Key: "uid", Value: bson.Binary{Subtype: bson.TypeBinaryGeneric, Data: s.uid}},
		}},
		{Key: "lastUse", Value: bson.NewDateTimeFromTime(s.lastUse)},
	}
	if s.user != "" {
		d = append(d, bson.E{Key: "user", Value: s.user})
	}
	return d
}
