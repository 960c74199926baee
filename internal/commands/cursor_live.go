package commands

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// noAuthUID is how mongod shows the user part of a session id when no one
// is authenticated: the SHA-256 of the empty user name, in base64.
const noAuthUID = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="

// sessionID is the request's lsid.id, or nil outside a session.
func sessionID(r *request) []byte {
	v, _ := bsonutil.Field(r.body, "lsid")
	d, _ := v.(bson.D)
	id, _ := bsonutil.Field(d, "id")
	if b, ok := id.(bson.Binary); ok {
		return b.Data
	}
	return nil
}

// checkSession applies mongod's rule: a cursor is used only in the session
// that opened it, and one opened outside a session only outside one.
func checkSession(r *request, c *cursor.Cursor) error {
	cur := sessionID(r)
	switch {
	case cur != nil && c.Session == nil:
		return mongoerr.Newf(mongoerr.Location50736, "Cannot run getMore on cursor %d, which was not created in a session, in session %s", c.ID, formatLSID(cur))
	case cur == nil && c.Session != nil:
		return mongoerr.Newf(mongoerr.Location50737, "Cannot run getMore on cursor %d, which was created in session %s, without an lsid", c.ID, formatLSID(c.Session))
	case !bytes.Equal(cur, c.Session):
		return mongoerr.Newf(mongoerr.Location50738, "Cannot run getMore on cursor %d, which was created in session %s, in session %s", c.ID, formatLSID(c.Session), formatLSID(cur))
	}
	return nil
}

func formatLSID(id []byte) string {
	return bsonutil.FormatUUID(id) + " - " + noAuthUID + " -  - "
}

// cursorContext makes r's context one that getMore can replace, for a
// command that may open a cursor.
func cursorContext(r *request) { r.ctx = r.live.Context(r.ctx) }
