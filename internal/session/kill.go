package session

import (
	"bytes"
	"crypto/sha256"
	"slices"
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
