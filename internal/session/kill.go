package session

import (
	"bytes"
	"crypto/sha256"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// Match names the sessions killSessions or killAllSessions ends the work
// of, by lsid.id.
type Match func(id []byte) bool

// IDs matches the sessions whose lsid.id is one of ids.
func IDs(ids [][]byte) Match {
	return func(id []byte) bool {
		return slices.ContainsFunc(ids, func(x []byte) bool { return bytes.Equal(x, id) })
	}
}

// All matches every session.
func All() Match { return func([]byte) bool { return true } }

// matchesKey applies m to a transaction's key: lsid.id, followed by
// lsid.uid (a SHA-256) when a router sent one.
func (m Match) matchesKey(key []byte) bool {
	if len(key) > sha256.Size && m(key[:len(key)-sha256.Size]) {
		return true
	}
	return m(key)
}

// IDsOf lists the lsid.id of the cached sessions whose uid is in uids,
// for killAllSessions naming users.
func (c *Cache) IDsOf(uids [][]byte) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]byte
	for _, rec := range c.m {
		if slices.ContainsFunc(uids, func(u []byte) bool { return bytes.Equal(u, rec.uid) }) {
			out = append(out, rec.id)
		}
	}
	return out
}

// AbortSessions aborts the transactions in progress of the sessions m
// names, as killSessions does, and returns how many it aborted. Their
// statements still running are stopped by the caller, through the
// operations registry.
func (ts *Transactions) AbortSessions(m Match) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n := 0
	for key, t := range ts.bySess {
		if t.State == TxnInProgress && m.matchesKey([]byte(key)) {
			ts.abortLocked(t)
			n++
		}
	}
	return n
}

// Named reads which sessions a killSessions or killAllSessions command
// names, for a router that keeps no session cache: a session by its
// lsid.id and its user ("user@db", "" without access control). A
// killSessions names its ids; a killAllSessions every session ([]) or
// its listed users'.
func Named(body bson.D) func(id []byte, user string) bool {
	list := bsonutil.ToA(body[0].Value)
	if body[0].Key == "killSessions" {
		return func(id []byte, _ string) bool {
			return slices.ContainsFunc(list, func(x any) bool {
				v, _ := bsonutil.Field(bsonutil.ToD(x), "id")
				b, ok := v.(bson.Binary)
				return ok && bytes.Equal(b.Data, id)
			})
		}
	}
	return func(_ []byte, user string) bool {
		return len(list) == 0 || slices.ContainsFunc(list, func(x any) bool {
			d := bsonutil.ToD(x)
			u, _ := bsonutil.Field(d, "user")
			db, _ := bsonutil.Field(d, "db")
			name, _ := u.(string)
			dbName, _ := db.(string)
			return name+"@"+dbName == user || name == "" && user == ""
		})
	}
}
