// Package cursor keeps the server's open cursors: the rest of a find or
// aggregate result that clients fetch with getMore, closed by killCursors,
// by exhaustion, or after sitting idle too long.
package cursor

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
)

// DefaultIdleTimeout is MongoDB's cursorTimeoutMillis default.
const DefaultIdleTimeout = 10 * time.Minute

// Source yields documents; aggregate and docstore iterators satisfy it.
type Source interface {
	Next() (bson.D, bool, error)
	Close() error
}

// Cursor is one open cursor. Its Source is used by one getMore at a time.
type Cursor struct {
	ID     int64
	NS     string // "db.coll" as replies report it
	Source Source
	// Session is the lsid.id of the session the cursor was opened in
	// (nil: none); getMore checks it against its own.
	Session []byte
	// Owner is the user who opened the cursor ("" without access
	// control); only they may use it.
	Owner string
	// Privileges are what opening it took, for getMore to check again;
	// access control gives them meaning.
	Privileges any
	// Tailable and similar options are not supported.
	lastUsed time.Time
	busy     bool
	// killed marks a cursor killSessions named while a getMore held it:
	// its Checkin closes it.
	killed bool
}

// Registry holds open cursors by ID.
type Registry struct {
	mu       sync.Mutex
	cursors  map[int64]*Cursor
	clock    clock.Clock
	idle     time.Duration
	timedOut int64
}

// NewRegistry returns an empty registry; idle 0 means DefaultIdleTimeout.
func NewRegistry(c clock.Clock, idle time.Duration) *Registry {
	if c == nil {
		c = clock.Real{}
	}
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	return &Registry{cursors: map[int64]*Cursor{}, clock: c, idle: idle}
}

// Add registers src, opened in session (nil: none), under a new random
// positive ID.
func (r *Registry) Add(ns string, src Source, session []byte) *Cursor {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &Cursor{ID: r.newID(), NS: ns, Source: src, Session: session, lastUsed: r.clock.Now()}
	r.cursors[c.ID] = c
	return c
}

func (r *Registry) newID() int64 {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id := int64(binary.LittleEndian.Uint64(b[:]) & (1<<63 - 1))
		if _, taken := r.cursors[id]; id != 0 && !taken {
			return id
		}
	}
}

// Checkout takes the cursor for a getMore; ok is false if it does not exist
// or is in use. The caller must Checkin or Remove it.
func (r *Registry) Checkout(id int64) (*Cursor, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cursors[id]
	if !ok || c.busy {
		return nil, false
	}
	c.busy = true
	return c, true
}

// Checkin returns a cursor after use and restarts its idle clock.
func (r *Registry) Checkin(c *Cursor) {
	r.mu.Lock()
	c.busy = false
	c.lastUsed = r.clock.Now()
	killed := c.killed && r.cursors[c.ID] == c
	if killed {
		delete(r.cursors, c.ID)
	}
	r.mu.Unlock()
	if killed {
		_ = c.Source.Close()
	}
}

// KillSessions closes the cursors opened in the sessions match takes (by
// lsid.id), as killSessions does: at once when idle, at the end of its
// getMore when one holds it. It returns how many it named.
func (r *Registry) KillSessions(match func(id []byte) bool) int {
	r.mu.Lock()
	var idle []*Cursor
	n := 0
	for id, c := range r.cursors {
		if c.Session == nil || !match(c.Session) {
			continue
		}
		n++
		if c.busy {
			c.killed = true
			continue
		}
		idle = append(idle, c)
		delete(r.cursors, id)
	}
	r.mu.Unlock()
	for _, c := range idle {
		_ = c.Source.Close()
	}
	return n
}

// Remove closes and forgets the cursor; it reports whether it existed.
func (r *Registry) Remove(id int64) bool {
	r.mu.Lock()
	c, ok := r.cursors[id]
	delete(r.cursors, id)
	r.mu.Unlock()
	if ok {
		_ = c.Source.Close()
	}
	return ok
}

// SetOwner records who opened cursor id and with what privileges.
func (r *Registry) SetOwner(id int64, owner string, privileges any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.cursors[id]; ok {
		c.Owner, c.Privileges = owner, privileges
	}
}

// Lookup returns the owner and namespace of cursor id.
func (r *Registry) Lookup(id int64) (owner, ns string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cursors[id]
	if !ok {
		return "", "", false
	}
	return c.Owner, c.NS, true
}

// Open reports the number of open cursors.
func (r *Registry) Open() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cursors)
}

// TimedOut reports how many cursors were closed for idleness.
func (r *Registry) TimedOut() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.timedOut
}

// ReapIdle closes cursors idle for longer than the timeout and returns how
// many it closed.
func (r *Registry) ReapIdle() int {
	now := r.clock.Now()
	r.mu.Lock()
	var stale []*Cursor
	for id, c := range r.cursors {
		if !c.busy && now.Sub(c.lastUsed) > r.idle {
			stale = append(stale, c)
			delete(r.cursors, id)
		}
	}
	r.timedOut += int64(len(stale))
	r.mu.Unlock()
	for _, c := range stale {
		_ = c.Source.Close()
	}
	return len(stale)
}

// CloseAll closes every cursor (at shutdown).
func (r *Registry) CloseAll() {
	r.mu.Lock()
	all := r.cursors
	r.cursors = map[int64]*Cursor{}
	r.mu.Unlock()
	for _, c := range all {
		_ = c.Source.Close()
	}
}
