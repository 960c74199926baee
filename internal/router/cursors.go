package router

import (
	"math/rand/v2"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// cursorIdleTimeout is mongos's cursorTimeoutMillis default: a cursor no
// client has used for this long is closed.
const cursorIdleTimeout = 10 * time.Minute

// maxBatchBytes bounds the documents of one reply batch, as mongod's 16 MB.
const maxBatchBytes = 16 << 20

// routerCursor is a cursor the router handed to a client. Its id is the
// router's own: a driver sends getMore to the server that opened the
// cursor, so a shard's cursor id never reaches a client.
type routerCursor struct {
	id       int64
	ns       string
	lastUsed time.Time
	inUse    bool
	// owner is the user who opened it ("" without access control) and
	// privileges what opening it took: another user's getMore is
	// refused, and so is the owner's once those are gone, as on mongod.
	owner      string
	privileges any
	// session is the lsid.id of the session that opened it, nil outside
	// one: only a getMore in that session continues it
	// (checkCursorSession).
	session []byte
	// Exactly one is set: a cursor of one shard or config server that
	// getMore passes through, the merged results of several shards, or a
	// change stream merged from every shard's.
	remote *remoteCursor
	merged *mergedCursor
	stream *mergedStream
}

// remoteCursor is a cursor open on a replica set's primary.
type remoteCursor struct {
	rs   *wireclient.ReplicaSet
	db   string
	coll string
	id   int64
}

// mergedCursor is the router's end of a query sent to several shards.
type mergedCursor struct {
	streams []*shardStream
	out     aggregate.Iterator
	held    bson.D // read but not sent: it did not fit the last batch
}

type cursorTable struct {
	clock clock.Clock
	mu    sync.Mutex
	byID  map[int64]*routerCursor
}

func newCursorTable(clk clock.Clock) *cursorTable {
	return &cursorTable{clock: clk, byID: map[int64]*routerCursor{}}
}

// add registers c under a new id, and closes cursors idle too long.
func (t *cursorTable) add(c *routerCursor) []*routerCursor {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		c.id = rand.Int64N(1<<62) + 1
		if _, taken := t.byID[c.id]; !taken {
			break
		}
	}
	c.lastUsed = now
	t.byID[c.id] = c
	var idle []*routerCursor
	for id, old := range t.byID {
		if !old.inUse && now.Sub(old.lastUsed) > cursorIdleTimeout {
			delete(t.byID, id)
			idle = append(idle, old)
		}
	}
	return idle
}

// checkOut takes cursor id for one getMore.
func (t *cursorTable) checkOut(id int64, ns string) (*routerCursor, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.byID[id]
	switch {
	case !ok:
		return nil, mongoerr.Newf(mongoerr.CursorNotFound, "cursor id %d not found", id)
	case c.ns != ns:
		return nil, mongoerr.Newf(mongoerr.Unauthorized, "Requested getMore on namespace '%s', but cursor belongs to a different namespace %s", ns, c.ns)
	case c.inUse:
		return nil, mongoerr.Newf(mongoerr.CursorInUse, "cursor id %d is already in use", id)
	}
	c.inUse = true
	return c, nil
}

// checkIn returns a cursor after a getMore; done removes it.
func (t *cursorTable) checkIn(c *routerCursor, done bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.inUse = false
	c.lastUsed = t.clock.Now()
	if done {
		delete(t.byID, c.id)
	}
}

// remove takes a cursor out of the table for killCursors.
func (t *cursorTable) remove(id int64) (*routerCursor, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.byID[id]
	if ok {
		delete(t.byID, id)
	}
	return c, ok
}

// adoptCursor registers a remote cursor reply's cursor as the router's
// and answers with the router's id; a reply without an open cursor is
// handed on as it is.
func (r *Router) adoptCursor(op *operation, rs *wireclient.ReplicaSet, reply bson.D) bson.D {
	reply = forwardable(reply)
	cur, ok := bsonutil.Field(reply, "cursor")
	if !ok {
		return reply
	}
	curDoc := bsonutil.ToD(cur)
	id, _ := bsonutil.Field(curDoc, "id")
	remoteID, _ := id.(int64)
	if remoteID == 0 {
		return reply
	}
	ns, _ := bsonutil.Field(curDoc, "ns")
	nsName, _ := ns.(string)
	_, remoteColl := splitNS(nsName)
	c := &routerCursor{ns: nsName, remote: &remoteCursor{rs: rs, db: op.db, coll: remoteColl, id: remoteID}}
	r.register(op, c)
	return bsonutil.WithField(reply, "cursor", bsonutil.WithField(curDoc, "id", c.id))
}

// register gives a new router cursor its id, the user and the session
// that opened it, and closes the cursors idle too long.
func (r *Router) register(op *operation, c *routerCursor) {
	c.session = sessionID(op.body)
	if c.owner = r.auth.UserOf(op.conn); c.owner != "" {
		c.privileges = r.auth.Privileges(op.db, op.name, op.body)
	}
	r.closeIdle(op, r.cursors.add(c))
}

// lookup returns a cursor's owner and namespace without checking it out.
func (t *cursorTable) lookup(id int64) (owner, ns string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.byID[id]
	if !ok {
		return "", "", false
	}
	return c.owner, c.ns, true
}

// closeIdle kills the remote ends of cursors timed out on the router.
func (r *Router) closeIdle(op *operation, idle []*routerCursor) {
	for _, c := range idle {
		r.killRemote(op, c)
	}
}

// killRemote kills a router cursor's shard cursors.
func (r *Router) killRemote(op *operation, c *routerCursor) {
	if c.remote != nil {
		killOne(op, c.remote.rs, c.remote.db, c.remote.coll, c.remote.id)
		return
	}
	if c.stream != nil {
		c.stream.close(op)
		return
	}
	for _, s := range c.merged.streams {
		if s.id != 0 {
			killOne(op, s.rs, s.db, s.coll, s.id)
			s.id = 0
		}
	}
}

func killOne(op *operation, rs *wireclient.ReplicaSet, db, coll string, id int64) {
	_, _ = rs.Run(op.ctx, db, bson.D{{Key: "killCursors", Value: coll}, {Key: "cursors", Value: bson.A{id}}})
}

func splitNS(ns string) (db, coll string) {
	for i := 0; i < len(ns); i++ {
		if ns[i] == '.' {
			return ns[:i], ns[i+1:]
		}
	}
	return ns, ""
}
