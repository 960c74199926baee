package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cursor"
)

func cmdAuth(h *Handler, r *request) (bson.D, error) {
	return h.deps.Auth.Run(r.conn, r.db, r.name, r.secret)
}

// listable reports whether listDatabases shows db to this client: all of
// them with the listDatabases action, else those it has privileges on.
func (h *Handler) listable(r *request, db string) bool {
	a := h.deps.Auth
	return a.MayListAllDatabases(r.conn) || a.MaySeeDatabase(r.conn, db)
}

// collectionListable reports whether listCollections shows a collection:
// all of them with the listCollections action, else (authorizedCollections)
// those the user has a privilege on.
func (h *Handler) collectionListable(r *request, coll string) bool {
	a := h.deps.Auth
	return a.MayListAllCollections(r.conn, r.db) || a.MaySeeCollection(r.conn, r.db, coll)
}

// recordCursorOwner marks a cursor the command opened as its user's. The
// client learns the id only from this reply, so nobody can use the cursor
// before it has its owner.
func (h *Handler) recordCursorOwner(r *request, reply bson.D) {
	if r.name == "getMore" {
		return // the cursor keeps what it was opened with
	}
	cur, _ := bsonutil.Field(reply, "cursor")
	d, _ := cur.(bson.D)
	id, _ := bsonutil.Field(d, "id")
	n, ok := id.(int64)
	if !ok || n == 0 {
		return
	}
	if owner := h.deps.Auth.UserOf(r.conn); owner != "" {
		h.deps.Cursors.SetOwner(n, owner, h.deps.Auth.Privileges(r.db, r.name, r.secret))
	}
}

// checkCursorUse refuses getMore of another user's cursor, or by a user
// who has since lost what opening it took.
func (h *Handler) checkCursorUse(r *request, c *cursor.Cursor) error {
	return h.deps.Auth.CheckGetMore(r.conn, c.ID, c.Owner, c.Privileges)
}

// checkCursorsKill refuses killCursors, before it kills any, when one of
// the cursors is another user's and the user may not kill any cursor.
func (h *Handler) checkCursorsKill(r *request, ids bson.A) error {
	for _, x := range ids {
		id, _ := x.(int64)
		owner, ns, ok := h.deps.Cursors.Lookup(id)
		if ok && !h.deps.Auth.MayKillCursor(r.conn, owner, ns) {
			return auth.CursorError(id)
		}
	}
	return nil
}
