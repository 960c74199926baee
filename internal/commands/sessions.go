package commands

import (
	"errors"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/session"
)

// The logical-session commands over the session cache (internal/session):
// endSessions, refreshSessions and $listLocalSessions.

// touchSession records the session a command names, if any, as used now.
func (h *Handler) touchSession(r *request, now time.Time) error {
	if id := sessionID(r); id != nil {
		return h.touch(id, h.sessionUser(r), now)
	}
	return nil
}

// touch records that user used session id at now (h.steady), as mongod's cache does.
func (h *Handler) touch(id []byte, user string, now time.Time) error {
	err := h.sessions.Touch(id, user, now)
	if errors.Is(err, session.ErrFull) {
		return mongoerr.Newf(mongoerr.TooManyLogicalSessions, "Unable to add session ID %s into the cache because the number of active sessions is too high", bsonutil.FormatUUID(id))
	}
	return err
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
		h.sessions.End(id, user)
	}
	return bson.D{}, nil
}

func cmdRefreshSessions(h *Handler, r *request) (bson.D, error) {
	ids, err := sessionIDs(r)
	if err != nil {
		return nil, err
	}
	user := h.sessionUser(r)
	for _, id := range ids {
		if err := h.touch(id, user, h.steady.Now()); err != nil {
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
		return h.sessions.List(nil, h.steady.Now()), nil
	}
	if len(users) == 0 {
		users = []string{self}
	}
	uids := make([][]byte, len(users))
	for i, u := range users {
		uids[i] = session.UserDigest(u)
	}
	return h.sessions.List(uids, h.steady.Now()), nil
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
			if users, err = sessionUsers("$listLocalSessions", "users", e.Value); err != nil {
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

// sessionUsers reads a list of {user, db} documents: the users field of
// $listLocalSessions (field "users"), or killAllSessions' own.
func sessionUsers(cmd, field string, v any) ([]string, error) {
	a, ok := v.(bson.A)
	if !ok {
		return nil, wrongType(cmd, field, v, "array")
	}
	out := make([]string, 0, len(a))
	for _, x := range a {
		d, _ := x.(bson.D)
		user, okUser := lookupString(d, "user")
		db, okDB := lookupString(d, "db")
		if !okUser || !okDB {
			return nil, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.%s.user' is missing but a required field", cmd, field)
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

// cmdKillSessions ends the work of the caller's sessions it names, as
// mongod does: their operations in flight and cursors, and their
// transactions in progress.
func cmdKillSessions(h *Handler, r *request) (bson.D, error) {
	ids, err := sessionIDs(r)
	if err != nil {
		return nil, err
	}
	own := session.IDs(h.sessions.IDsOf([][]byte{session.UserDigest(h.sessionUser(r))}))
	h.killSessions(r, session.IDs(slices.DeleteFunc(ids, func(id []byte) bool { return !own(id) })))
	return bson.D{}, nil
}

// cmdKillAllSessions ends the work of every session ([]), or of the
// listed users' sessions.
func cmdKillAllSessions(h *Handler, r *request) (bson.D, error) {
	users, err := sessionUsers(r.name, r.name, r.body[0].Value)
	if err != nil {
		return nil, err
	}
	if len(users) == 0 {
		h.killSessions(r, session.All())
		return bson.D{}, nil
	}
	uids := make([][]byte, len(users))
	for i, u := range users {
		uids[i] = session.UserDigest(u)
	}
	h.killSessions(r, session.IDs(h.sessions.IDsOf(uids)))
	return bson.D{}, nil
}

// killSessions ends the work of the sessions match takes, r's own
// operation left to finish.
func (h *Handler) killSessions(r *request, match session.Match) {
	h.txns.AbortSessions(match)
	h.deps.Cursors.KillSessions(match)
	h.deps.Activity.KillSessions(match, r.opID)
}

// sessionUser is the user whose sessions a request names: "" without a
// login (or a connection, for commands run in process).
func (h *Handler) sessionUser(r *request) string {
	if r.conn == nil {
		return ""
	}
	return h.deps.Auth.UserOf(r.conn)
}
