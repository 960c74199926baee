package auth

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Authorize decides whether the connection may run the command; it is
// called once per command before it runs. With access control off every
// command may run.
func (m *Manager) Authorize(c Conn, db, name string, body bson.D) error {
	if !m.cfg.Enabled || open[name] {
		return nil
	}
	s := sessionOf(c)
	if s.user == nil {
		if !m.localhostBypass(c) {
			return requiresAuthentication(name)
		}
		if (name == "createUser" || name == "createRole") && db == adminDB {
			return nil
		}
		if name == "replSetInitiate" || name == "replSetGetStatus" {
			return nil // mongod lets the localhost exception initiate a set first
		}
	}
	for _, n := range requirementsOf(db, name, body) {
		if !m.allowed(s, n) {
			return notAuthorized(db, body)
		}
	}
	return nil
}

// localhostBypass is mongod's localhost exception: while no user exists,
// a loopback client is not told to authenticate; it holds no privilege,
// but may create the first user (or role) in admin.
func (m *Manager) localhostBypass(c Conn) bool {
	return !m.HasUsers() && isLoopback(c.RemoteAddr())
}

// notAuthorized is mongod's refusal, quoting the command with its
// secrets masked.
func notAuthorized(db string, body bson.D) error {
	return mongoerr.Newf(mongoerr.Unauthorized, "not authorized on %s to execute command %s",
		db, bsonutil.Format(Redact(body)))
}

// isSecret reports whether a field's value must never leave the command:
// not in error messages, logs, currentOp or the profiler.
func isSecret(key string) bool { return key == "pwd" || key == "payload" }

// Redact returns body with secret values replaced by "xxx", as mongod
// shows them; body itself is left alone.
func Redact(body bson.D) bson.D {
	for i, e := range body {
		if isSecret(e.Key) {
			out := append(bson.D(nil), body...)
			for j := i; j < len(out); j++ {
				if isSecret(out[j].Key) {
					out[j].Value = "xxx"
				}
			}
			return out
		}
	}
	return body
}

// UserOf names the connection's user ("name@db"; "" before a login): the
// owner of the cursors it opens and the user its profiler entries name.
func (m *Manager) UserOf(c Conn) string { return sessionOf(c).name }

// MayUseCursor reports whether the connection may getMore a cursor opened
// by owner: only the same user may, as on mongod.
func (m *Manager) MayUseCursor(c Conn, owner string) bool {
	return !m.cfg.Enabled || m.UserOf(c) == owner
}

// Privileges are what running name with body on db takes, to be kept
// with a cursor it opens.
func (m *Manager) Privileges(db, name string, body bson.D) any {
	return requirementsOf(db, name, body)
}

// CheckGetMore refuses a getMore of another user's cursor, and one by a
// user who no longer holds the privileges the cursor was opened with, as
// mongod does.
func (m *Manager) CheckGetMore(c Conn, id int64, owner string, privileges any) error {
	if !m.MayUseCursor(c, owner) {
		return CursorError(id)
	}
	needs, _ := privileges.([]Need)
	for _, n := range needs {
		if !m.allowed(sessionOf(c), n) {
			return mongoerr.Newf(mongoerr.Unauthorized, "not authorized for getMore with cursor id %d", id)
		}
	}
	return nil
}

// MayKillCursor reports whether the connection may kill a cursor on ns
// opened by owner: its owner may, and so may holders of killAnyCursor.
func (m *Manager) MayKillCursor(c Conn, owner, ns string) bool {
	if m.MayUseCursor(c, owner) {
		return true
	}
	db, coll := splitNS(ns)
	return m.allowed(sessionOf(c), need(nsTarget(db, coll), "killAnyCursor"))
}

// CursorError is mongod's refusal of another user's cursor.
func CursorError(id int64) error {
	return mongoerr.Newf(mongoerr.Unauthorized, "cursor id %d was not created by the authenticated user", id)
}

// MayListAllDatabases reports whether listDatabases shows every
// database; otherwise it shows those the user has some privilege on.
func (m *Manager) MayListAllDatabases(c Conn) bool {
	return !m.cfg.Enabled || m.allowed(sessionOf(c), need(clusterTarget(), "listDatabases"))
}

// MaySeeDatabase reports whether the user holds any privilege on db.
func (m *Manager) MaySeeDatabase(c Conn, db string) bool {
	s := sessionOf(c)
	m.refresh(s)
	for _, p := range s.privileges {
		r := p.Resource
		if r.Any || (!r.Cluster && (r.DB == "" || r.DB == db)) {
			return true
		}
	}
	return false
}

// MayListAllCollections reports whether listCollections on db shows every
// collection.
func (m *Manager) MayListAllCollections(c Conn, db string) bool {
	return !m.cfg.Enabled || m.allowed(sessionOf(c), need(dbTarget(db), "listCollections"))
}

// MaySeeCollection reports whether the user holds any privilege on db.coll.
func (m *Manager) MaySeeCollection(c Conn, db, coll string) bool {
	s := sessionOf(c)
	m.refresh(s)
	for _, p := range s.privileges {
		if p.Resource.matches(nsTarget(db, coll)) {
			return true
		}
	}
	return false
}

// HelloFields are what hello adds for authentication: the mechanisms of
// the user named in saslSupportedMechs, and the first step of a
// speculative authentication.
func (m *Manager) HelloFields(c Conn, body bson.D) bson.D {
	var out bson.D
	if v, ok := bsonutil.Field(body, "saslSupportedMechs"); ok {
		if mechs := m.supportedMechs(stringOf(v)); mechs != nil {
			out = append(out, bson.E{Key: "saslSupportedMechs", Value: mechs})
		}
	}
	if v, ok := bsonutil.Field(body, "speculativeAuthenticate"); ok {
		if reply := m.speculate(c, v); reply != nil {
			out = append(out, bson.E{Key: "speculativeAuthenticate", Value: reply})
		}
	}
	return out
}

func (m *Manager) supportedMechs(dbUser string) bson.A {
	db, user, ok := strings.Cut(dbUser, ".")
	if !ok {
		return nil
	}
	u := m.lookupUser(UserName{User: user, DB: db})
	if u == nil {
		return nil
	}
	out := bson.A{}
	for _, mech := range u.Credentials.Mechanisms() {
		out = append(out, mech)
	}
	return out
}

// speculate runs the saslStart a driver put in its hello; a failure only
// means the driver authenticates the ordinary way.
func (m *Manager) speculate(c Conn, v any) bson.D {
	d, ok := v.(bson.D)
	if !ok || len(d) == 0 {
		return nil
	}
	db, _ := bsonutil.Field(d, "db")
	var reply bson.D
	var err error
	switch d[0].Key {
	case "saslStart":
		reply, err = m.saslStart(c, stringOf(db), d)
	case "authenticate":
		reply, err = cmdAuthenticate(m, c, stringOf(db), d)
	default:
		return nil
	}
	if err != nil {
		return nil
	}
	return reply
}

// CheckListSessions refuses, as mongod does, a listing of other users'
// sessions ($listLocalSessions with allUsers or others' names) to a user
// without listSessions on the cluster.
func (m *Manager) CheckListSessions(c Conn, db string, body bson.D) error {
	if !m.cfg.Enabled || m.allowed(sessionOf(c), need(clusterTarget(), "listSessions")) {
		return nil
	}
	return notAuthorized(db, body)
}
