package commands

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
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
	return formatUUID(id) + " - " + noAuthUID + " -  - "
}

func formatUUID(b []byte) string {
	if len(b) != 16 {
		return hex.EncodeToString(b)
	}
	h := hex.EncodeToString(b)
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:])
}

// droppedError is mongod's answer to a getMore whose collection was
// dropped since the cursor's last batch.
func droppedError(err error) error {
	var de *docstore.DroppedError
	if errors.As(err, &de) {
		return mongoerr.Newf(mongoerr.QueryPlanKilled, "collection dropped. UUID %s", formatUUID(de.UUID.Data))
	}
	return err
}

// cursorContext makes r's context one that getMore can replace, for a
// command that may open a cursor.
func cursorContext(r *request) { r.ctx = r.live.Context(r.ctx) }
