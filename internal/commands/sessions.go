package commands

import (
	"bytes"
	"crypto/sha256"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// The logical session cache. As mongod does, the server remembers each
// session a command names in its lsid, with the session's user and last
// use; $listLocalSessions lists them. endSessions forgets sessions,
// refreshSessions renews them, and a session unused for
// localLogicalSessionTimeoutMinutes (30) is gone. (mongod also writes the
// cache to config.system.sessions; Mayfly keeps it in memory only.)

// maxSessions is mongod's maxSessions default: past it, a command naming
// a new session fails with TooManyLogicalSessions, so that clients
// inventing session ids cannot grow the cache without bound.
const maxSessions = 1_000_000

type sessionCache struct {
	mu    sync.Mutex
	m     map[string]*sessionRecord
	limit int
}

// sessionRecord is one session: its id, its user's digest (uid) and name
// ("" without authentication), and when it was last used.
type sessionRecord struct {
	id      []byte
	uid     []byte
	user    string
	lastUse time.Time
}

func newSessionCache() *sessionCache {
	return &sessionCache{m: map[string]*sessionRecord{}, limit: maxSessions}
}

// userDigest is mongod's session uid: the SHA-256 of "user@db", or of
// nothing without authentication.
func userDigest(user string) []byte {
	sum := sha256.Sum256([]byte(user))
	return sum[:]
}

func (s *sessionRecord) key() string { return string(s.id) + string(s.uid) }

// touch records that user used the session id at now. A new session
// past the limit first sweeps out expired ones, then fails as mongod's
// cache does when still full.
//
// A known session, every request of a client after its first, is
// renewed in place: records are only read under c.mu (list copies them).
func (c *sessionCache) touch(id []byte, user string, now time.Time) error {
	uid := sha256.Sum256([]byte(user))
	var buf [64]byte
	key := append(append(buf[:0], id...), uid[:]...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if rec, known := c.m[string(key)]; known { // no allocation for the lookup
		rec.lastUse = now
		return nil
	}
	rec := &sessionRecord{id: id, uid: bytes.Clone(uid[:]), user: user, lastUse: now}
	if len(c.m) >= c.limit {
		c.sweep(now)
		if len(c.m) >= c.limit {
			return mongoerr.Newf(mongoerr.TooManyLogicalSessions, "Unable to add session ID %s into the cache because the number of active sessions is too high", formatUUID(id))
		}
	}
	c.m[rec.key()] = rec
	return nil
}

// sweep forgets the sessions unused for SessionLifetime; c.mu is held.
func (c *sessionCache) sweep(now time.Time) {
	for k, rec := range c.m {
		if now.Sub(rec.lastUse) > SessionLifetime {
			delete(c.m, k)
		}
	}
}

// end forgets user's session id.
func (c *sessionCache) end(id []byte, user string) {
	rec := sessionRecord{id: id, uid: userDigest(user)}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, rec.key())
}

// list returns the live sessions whose uid is in uids (nil: all), oldest
// use first, and forgets the expired ones.
func (c *sessionCache) list(uids [][]byte, now time.Time) []bson.D {
	c.mu.Lock()
	c.sweep(now)
	var recs []*sessionRecord
	for _, rec := range c.m {
		if uids == nil || slices.ContainsFunc(uids, func(u []byte) bool { return bytes.Equal(u, rec.uid) }) {
			copied := *rec
			recs = append(recs, &copied)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(recs, func(a, b *sessionRecord) int { return a.lastUse.Compare(b.lastUse) })
	out := make([]bson.D, len(recs))
	for i, rec := range recs {
		out[i] = rec.doc()
	}
	return out
}

// doc is the record as $listLocalSessions shows it.
func (s *sessionRecord) doc() bson.D {
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

// touchSession records the session a command names, if any.
func (h *Handler) touchSession(r *request) error {
	if id := sessionID(r); id != nil {
		return h.sessions.touch(id, h.sessionUser(r), h.steady.Now())
	}
	return nil
}

// sessionIDs reads the {id: UUID} documents of endSessions and
// refreshSessions.
func sessionIDs(r *request) ([][]byte, error) {
	v := r.body[0].Value
	a, ok := v.(bson.A)
	if !ok {
		return nil, wrongType(r.name, r.name, v, "array")
	}
	out := make([][]byte, 0, len(a))
	for _, x := range a {
		d, _ := x.(bson.D)
		idv, _ := bsonutil.Field(d, "id")
		b, isBin := idv.(bson.Binary)
		if !isBin || b.Subtype != bson.TypeBinaryUUID {
			return nil, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.id' is missing but a required field", r.name)
		}
		out = append(out, b.Data)
	}
	return out, nil
}

func cmdEndSessions(h *Handler, r *request) (bson.D, error) {
	ids, err := sessionIDs(r)
	if err != nil {
		return nil, err
	}
	user := h.sessionUser(r)
	for _, id := range ids {
		h.sessions.end(id, user)
	}
	return bson.D{}, nil
}

func cmdRefreshSessions(h *Handler, r *request) (bson.D, error) {
	ids, err := sessionIDs(r)
	if err != nil {
		return nil, err
	}
	user, now := h.sessionUser(r), h.steady.Now()
	for _, id := range ids {
		if err := h.sessions.touch(id, user, now); err != nil {
			return nil, err
		}
	}
	return bson.D{}, nil
}

// listLocalSessions answers {aggregate: 1} starting with
// $listLocalSessions: the sessions the stage's spec selects.
func (h *Handler) listLocalSessions(r *request, spec any) ([]bson.D, error) {
	d, ok := spec.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.TypeMismatch, "$listLocalSessions options must be specified in an object, but found: %s", bsonutil.TypeName(spec))
	}
	all, users, err := parseListSessions(d)
	if err != nil {
		return nil, err
	}
	self := h.sessionUser(r)
	if all || slices.ContainsFunc(users, func(u string) bool { return u != self }) {
		if err := h.deps.Auth.CheckListSessions(r.conn, r.db, r.body); err != nil {
			return nil, err
		}
	}
	if all {
		return h.sessions.list(nil, h.steady.Now()), nil
	}
	if len(users) == 0 {
		users = []string{self}
	}
	uids := make([][]byte, len(users))
	for i, u := range users {
		uids[i] = userDigest(u)
	}
	return h.sessions.list(uids, h.steady.Now()), nil
}

// parseListSessions reads {allUsers, users: [{user, db}]} as mongod's
// ListSessionsSpec does; users come back as "user@db".
func parseListSessions(d bson.D) (all bool, users []string, err error) {
	for _, e := range d {
		switch e.Key {
		case "allUsers":
			b, isBool := e.Value.(bool)
			if !isBool {
				return false, nil, wrongType("$listLocalSessions", "allUsers", e.Value, "bool")
			}
			all = b
		case "users":
			if users, err = listSessionsUsers(e.Value); err != nil {
				return false, nil, err
			}
		default:
			return false, nil, mongoerr.Newf(mongoerr.Location40415, "BSON field '$listLocalSessions.%s' is an unknown field.", e.Key)
		}
	}
	if all && len(users) > 0 {
		return false, nil, mongoerr.New(mongoerr.UnsupportedFormat, "$listLocalSessions may not specify {allUsers:true} and {users:[...]} at the same time")
	}
	return all, users, nil
}

func listSessionsUsers(v any) ([]string, error) {
	a, ok := v.(bson.A)
	if !ok {
		return nil, wrongType("$listLocalSessions", "users", v, "array")
	}
	out := make([]string, 0, len(a))
	for _, x := range a {
		d, _ := x.(bson.D)
		user, okUser := lookupString(d, "user")
		db, okDB := lookupString(d, "db")
		if !okUser || !okDB {
			return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$listLocalSessions.users.user' is missing but a required field")
		}
		if user == "" && db == "" {
			out = append(out, "")
			continue
		}
		out = append(out, user+"@"+db)
	}
	return out, nil
}

func lookupString(d bson.D, key string) (string, bool) {
	v, _ := bsonutil.Field(d, key)
	s, ok := v.(string)
	return s, ok
}

// sessionUser is the user whose sessions a request names: "" without a
// login (or a connection, for commands run in process).
func (h *Handler) sessionUser(r *request) string {
	if r.conn == nil {
		return ""
	}
	return h.deps.Auth.UserOf(r.conn)
}
