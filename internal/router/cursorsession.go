package router

import (
	"bytes"
	"encoding/base64"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/session"
)

// A router cursor belongs to the logical session it was opened in, as a
// mongos cursor does (cluster_find.cpp's validateLSID): a getMore must
// name that session, or none when the cursor was opened outside one, or
// it is refused and the cursor stays open. killCursors is not held to
// it: outside a transaction mongod lets one session kill another's
// cursors (generic_cursor::validateKillInTransaction), and the router
// runs no transactions.

// sessionID is a command's lsid.id, nil outside a session. It is copied:
// a request's decoded values may share its read buffer.
func sessionID(body bson.D) []byte {
	lsid, _ := bsonutil.Field(body, "lsid")
	id, _ := bsonutil.Field(bsonutil.ToD(lsid), "id")
	if b, ok := id.(bson.Binary); ok {
		return bytes.Clone(b.Data)
	}
	return nil
}

// checkCursorSession refuses a getMore by user outside the session that
// opened c, with mongos's codes and messages.
func checkCursorSession(op *operation, user string, c *routerCursor) error {
	in := sessionID(op.body)
	switch {
	case in != nil && c.session == nil:
		return mongoerr.Newf(mongoerr.Location50799, "Cannot run getMore on cursor %d, which was not created in a session, in session %s",
			c.id, formatLSID(in, user))
	case in == nil && c.session != nil:
		return mongoerr.Newf(mongoerr.Location50800, "Cannot run getMore on cursor %d, which was created in session %s, without an lsid",
			c.id, formatLSID(c.session, c.owner))
	case !bytes.Equal(in, c.session):
		return mongoerr.Newf(mongoerr.Location50801, "Cannot run getMore on cursor %d, which was created in session %s, in session %s",
			c.id, formatLSID(c.session, c.owner), formatLSID(in, user))
	}
	return nil
}

// formatLSID is a session id as mongod prints one: its id, its user's
// digest (the uid) and the empty transaction fields.
func formatLSID(id []byte, user string) string {
	return bsonutil.FormatUUID(id) + " - " + base64.StdEncoding.EncodeToString(session.UserDigest(user)) + " -  - "
}

// cmdKillSessions answers killSessions and killAllSessions: every shard
// ends the named sessions' work there (their cursors, transactions and
// commands in flight; the router passes each command's lsid on), and the
// router forgets its own cursors of those sessions. A shard refuses bad
// arguments, and the router answers with its refusal.
func cmdKillSessions(r *Router, op *operation) (bson.D, error) {
	if _, _, err := r.eachShard(op, "admin", passThrough(op.body)); err != nil {
		return nil, err
	}
	killed := session.Named(op.body)
	r.cursors.forgetSessions(func(c *routerCursor) bool { return c.session != nil && killed(c.session, c.owner) })
	return bson.D{}, nil
}

// forgetSessions drops the cursors killed names, in use or not: their
// shards' ends are closed by the shards' own killSessions.
func (t *cursorTable) forgetSessions(killed func(c *routerCursor) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, c := range t.byID {
		if killed(c) {
			delete(t.byID, id)
		}
	}
}
