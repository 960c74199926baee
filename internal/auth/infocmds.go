package auth

import (
	"crypto/rand"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func newUUID() bson.Binary {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return bson.Binary{Subtype: bson.TypeBinaryUUID, Data: b}
}

// cmdUsersInfo lists users; a user may always see itself, others need
// viewUser on their database.
func cmdUsersInfo(m *Manager, c Conn, db string, body bson.D) (bson.D, error) {
	users, err := m.selectUsers(db, body[0].Value)
	if err != nil {
		return nil, err
	}
	s := sessionOf(c)
	showCreds, _ := bsonutil.Field(body, "showCredentials")
	showPrivs, _ := bsonutil.Field(body, "showPrivileges")
	out := bson.A{}
	for _, u := range users {
		if err := m.mayView(s, u.Name.DB, "viewUser", s.user != nil && *s.user == u.Name, body); err != nil {
			return nil, err
		}
		out = append(out, m.userInfo(u, showCreds == true, showPrivs == true))
	}
	return bson.D{{Key: "users", Value: out}}, nil
}

func (m *Manager) mayView(s *Session, db, action string, own bool, body bson.D) error {
	if !m.cfg.Enabled || own || m.allowed(s, need(dbTarget(db), action)) {
		return nil
	}
	return notAuthorized(db, body)
}

func (m *Manager) selectUsers(db string, arg any) ([]*User, error) {
	switch v := arg.(type) {
	case string:
		return m.someUsers(UserName{User: v, DB: db}), nil
	case bson.D:
		if fa, _ := bsonutil.Field(v, "forAllDBs"); fa == true {
			return m.usersOf(""), nil
		}
		u, _ := bsonutil.Field(v, "user")
		d, _ := bsonutil.Field(v, "db")
		return m.someUsers(UserName{User: stringOf(u), DB: stringOf(d)}), nil
	case bson.A:
		var out []*User
		for _, x := range v {
			us, err := m.selectUsers(db, x)
			if err != nil {
				return nil, err
			}
			out = append(out, us...)
		}
		return out, nil
	case int32, int64, float64:
		return m.usersOf(db), nil
	}
	return nil, mongoerr.New(mongoerr.BadValue, "User name must be either a string or an object")
}

func (m *Manager) someUsers(n UserName) []*User {
	if u := m.lookupUser(n); u != nil {
		return []*User{u}
	}
	return nil
}

func (m *Manager) userInfo(u *User, creds, privs bool) bson.D {
	mechs := bson.A{}
	for _, x := range u.Credentials.Mechanisms() {
		mechs = append(mechs, x)
	}
	d := bson.D{
		{Key: "_id", Value: u.Name.id()}, {Key: "userId", Value: u.UserID},
		{Key: "user", Value: u.Name.User}, {Key: "db", Value: u.Name.DB},
	}
	if u.CustomData != nil {
		d = append(d, bson.E{Key: "customData", Value: u.CustomData})
	}
	d = append(d, bson.E{Key: "roles", Value: roleDocs(u.Roles)})
	if creds {
		d = append(d, bson.E{Key: "credentials", Value: u.Credentials.Document()})
	}
	if privs {
		seen := map[RoleName]bool{}
		p := m.privilegesOf(u.Roles, seen)
		d = append(d, bson.E{Key: "inheritedRoles", Value: roleDocs(setToList(seen))},
			bson.E{Key: "inheritedPrivileges", Value: privilegeDocs(p)})
	}
	return append(d, bson.E{Key: "mechanisms", Value: mechs})
}

// setToList lists roles in a stable order (by database, then name).
func setToList(seen map[RoleName]bool) []RoleName {
	out := make([]RoleName, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].DB != out[j].DB {
			return out[i].DB < out[j].DB
		}
		return out[i].Role < out[j].Role
	})
	return out
}

func cmdCreateRole(m *Manager, _ Conn, db string, body bson.D) (bson.D, error) {
	name, err := userArg("createRole", body)
	if err != nil {
		return nil, err
	}
	n := RoleName{Role: name, DB: db}
	if IsBuiltin(n) || dbRoles[name] != nil {
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot create roles with the same name as a built-in role")
	}
	privV, ok := bsonutil.Field(body, "privileges")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'createRole.privileges' is missing but a required field")
	}
	privs, err := parsePrivileges(privV)
	if err != nil {
		return nil, err
	}
	if err := checkPrivilegesStayIn(db, privs); err != nil {
		return nil, err
	}
	rolesV, ok := bsonutil.Field(body, "roles")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'createRole.roles' is missing but a required field")
	}
	roles, err := m.existingRoles(rolesV, db)
	if err != nil {
		return nil, err
	}
	if m.lookupRole(n) != nil {
		return nil, mongoerr.Newf(mongoerr.Location51002, "Role \"%s\" already exists", n)
	}
	return bson.D{}, m.saveRole(&Role{Name: n, Privileges: privs, Roles: roles})
}

// cmdDropRole removes the role and every grant of it, as mongod does.
func cmdDropRole(m *Manager, _ Conn, db string, body bson.D) (bson.D, error) {
	name, err := userArg("dropRole", body)
	if err != nil {
		return nil, err
	}
	n := RoleName{Role: name, DB: db}
	if IsBuiltin(n) {
		return nil, mongoerr.Newf(mongoerr.InvalidRoleModification, "Cannot drop built-in role %s", n)
	}
	if m.lookupRole(n) == nil {
		return nil, mongoerr.Newf(mongoerr.RoleNotFound, "Role '%s' not found", n)
	}
	for _, u := range m.usersOf("") {
		if kept := removeRole(u.Roles, n); len(kept) != len(u.Roles) {
			cp := *u
			cp.Roles = kept
			if err := m.saveUser(&cp); err != nil {
				return nil, err
			}
		}
	}
	return bson.D{}, m.deleteRole(n)
}

func cmdRolesInfo(m *Manager, c Conn, db string, body bson.D) (bson.D, error) {
	names, err := m.selectRoles(db, body[0].Value, body)
	if err != nil {
		return nil, err
	}
	s := sessionOf(c)
	m.refresh(s)
	showPrivs, _ := bsonutil.Field(body, "showPrivileges")
	out := bson.A{}
	for _, n := range names {
		if err := m.mayView(s, n.DB, "viewRole", hasRole(s.roles, n), body); err != nil {
			return nil, err
		}
		out = append(out, m.roleInfo(n, showPrivs == true))
	}
	return bson.D{{Key: "roles", Value: out}}, nil
}

func hasRole(roles []RoleName, n RoleName) bool {
	for _, r := range roles {
		if r == n {
			return true
		}
	}
	return false
}

func (m *Manager) selectRoles(db string, arg any, body bson.D) ([]RoleName, error) {
	switch v := arg.(type) {
	case string:
		return m.someRoles(RoleName{Role: v, DB: db}), nil
	case bson.D:
		r, _ := bsonutil.Field(v, "role")
		d, _ := bsonutil.Field(v, "db")
		return m.someRoles(RoleName{Role: stringOf(r), DB: stringOf(d)}), nil
	case bson.A:
		var out []RoleName
		for _, x := range v {
			rs, err := m.selectRoles(db, x, body)
			if err != nil {
				return nil, err
			}
			out = append(out, rs...)
		}
		return out, nil
	case int32, int64, float64:
		var out []RoleName
		if b, _ := bsonutil.Field(body, "showBuiltinRoles"); b == true {
			out = builtinRolesOf(db)
		}
		for _, r := range m.rolesOf(db) {
			out = append(out, r.Name)
		}
		return out, nil
	}
	return nil, mongoerr.New(mongoerr.BadValue, "Role name must be either a string or an object")
}

func builtinRolesOf(db string) []RoleName {
	var out []RoleName
	for name := range dbRoles {
		out = append(out, RoleName{Role: name, DB: db})
	}
	if db == adminDB {
		for name := range adminRoles {
			if name != "__system" {
				out = append(out, RoleName{Role: name, DB: db})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Role < out[j].Role })
	return out
}

func (m *Manager) someRoles(n RoleName) []RoleName {
	if m.roleExists(n) {
		return []RoleName{n}
	}
	return nil
}

func (m *Manager) roleInfo(n RoleName, privs bool) bson.D {
	def := m.lookupRole(n)
	var direct []RoleName
	if def != nil {
		direct = def.Roles
	}
	seen := map[RoleName]bool{}
	inherited := m.privilegesOf([]RoleName{n}, seen)
	delete(seen, n)
	d := bson.D{
		{Key: "_id", Value: n.DB + "." + n.Role}, {Key: "role", Value: n.Role}, {Key: "db", Value: n.DB},
		{Key: "isBuiltin", Value: def == nil}, {Key: "roles", Value: roleDocs(direct)},
		{Key: "inheritedRoles", Value: roleDocs(setToList(seen))},
	}
	if privs {
		own, _ := builtinPrivileges(n)
		if def != nil {
			own = def.Privileges
		}
		d = append(d, bson.E{Key: "privileges", Value: privilegeDocs(own)},
			bson.E{Key: "inheritedPrivileges", Value: privilegeDocs(inherited)})
	}
	return d
}

// checkPrivilegesStayIn enforces mongod's rule that only roles in admin
// may reach beyond their own database.
func checkPrivilegesStayIn(db string, privs []Privilege) error {
	if db == adminDB {
		return nil
	}
	for _, p := range privs {
		if r := p.Resource; r.Any || r.Cluster || r.DB != db {
			return mongoerr.Newf(mongoerr.InvalidRoleModification,
				"Roles on the '%s' database cannot be granted privileges that target other databases or the cluster", db)
		}
	}
	return nil
}
