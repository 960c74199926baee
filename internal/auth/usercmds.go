package auth

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// handler runs one auth command on the connection's session.
type handler func(m *Manager, c Conn, db string, body bson.D) (bson.D, error)

var handlers = map[string]handler{
	"saslStart":    func(m *Manager, c Conn, db string, b bson.D) (bson.D, error) { return m.saslStart(c, db, b) },
	"saslContinue": func(m *Manager, c Conn, _ string, b bson.D) (bson.D, error) { return m.saslContinue(c, b) },
	"authenticate": cmdAuthenticate,
	"logout":       cmdLogout, "connectionStatus": cmdConnectionStatus,
	"createUser": cmdCreateUser, "updateUser": cmdUpdateUser, "dropUser": cmdDropUser,
	"dropAllUsersFromDatabase": cmdDropAllUsers, "usersInfo": cmdUsersInfo,
	"grantRolesToUser": cmdGrantRoles, "revokeRolesFromUser": cmdRevokeRoles,
	"createRole": cmdCreateRole, "dropRole": cmdDropRole, "rolesInfo": cmdRolesInfo,
	"updateRole": cmdUpdateRole, "grantPrivilegesToRole": cmdGrantPrivileges,
	"revokePrivilegesFromRole": cmdRevokePrivileges, "grantRolesToRole": cmdGrantRolesToRole,
	"revokeRolesFromRole": cmdRevokeRolesFromRole, "dropAllRolesFromDatabase": cmdDropAllRoles,
}

// CommandNames lists the commands Run answers.
func CommandNames() []string {
	names := make([]string, 0, len(handlers))
	for n := range handlers {
		names = append(names, n)
	}
	return names
}

// Run answers one of CommandNames. body is the command as the client sent
// it (passwords included); nothing here logs it.
func (m *Manager) Run(c Conn, db, name string, body bson.D) (bson.D, error) {
	h, ok := handlers[name]
	if !ok {
		return nil, mongoerr.Newf(mongoerr.CommandNotFound, "no such command: '%s'", name)
	}
	return h(m, c, db, body)
}

func cmdAuthenticate(m *Manager, c Conn, db string, body bson.D) (bson.D, error) {
	mech, _ := bsonutil.Field(body, "mechanism")
	if mech != MechX509 {
		return nil, mongoerr.Newf(mongoerr.MechanismUnavailable,
			"Received authentication for mechanism %v which is unknown or not enabled", mech)
	}
	return m.authenticateX509(c, db, body)
}

func cmdLogout(_ *Manager, c Conn, _ string, _ bson.D) (bson.D, error) {
	s := sessionOf(c)
	s.user, s.name, s.conv, s.decisions = nil, "", nil, nil
	return bson.D{}, nil
}

func cmdConnectionStatus(m *Manager, c Conn, _ string, body bson.D) (bson.D, error) {
	s := sessionOf(c)
	users, roles := bson.A{}, bson.A{}
	m.refresh(s)
	if u, ok := s.User(); ok {
		users = append(users, bson.D{{Key: "user", Value: u.User}, {Key: "db", Value: u.DB}})
		roles = roleDocs(s.roles)
	}
	info := bson.D{{Key: "authenticatedUsers", Value: users}, {Key: "authenticatedUserRoles", Value: roles}}
	if v, _ := bsonutil.Field(body, "showPrivileges"); v == true {
		info = append(info, bson.E{Key: "authenticatedUserPrivileges", Value: privilegeDocs(s.privileges)})
	}
	return bson.D{{Key: "authInfo", Value: info}}, nil
}

// userArg reads the user name a user command's first field names.
func userArg(name string, body bson.D) (string, error) {
	u, ok := body[0].Value.(string)
	if !ok || u == "" {
		return "", mongoerr.Newf(mongoerr.BadValue, "BSON field '%s.%s' must be a non-empty string", name, name)
	}
	return u, nil
}

func cmdCreateUser(m *Manager, c Conn, db string, body bson.D) (bson.D, error) {
	name, err := userArg("createUser", body)
	if err != nil {
		return nil, err
	}
	n := UserName{User: name, DB: db}
	if db == "local" {
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot create users in the local database")
	}
	rolesV, ok := bsonutil.Field(body, "roles")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'createUser.roles' is missing but a required field")
	}
	roles, err := m.existingRoles(rolesV, db)
	if err != nil {
		return nil, err
	}
	creds, err := newUserCredentials(n, body)
	if err != nil {
		return nil, err
	}
	if m.lookupUser(n) != nil {
		return nil, mongoerr.Newf(mongoerr.Location51003, "User \"%s\" already exists", n)
	}
	u := &User{Name: n, UserID: newUUID(), Roles: roles, Credentials: creds}
	if cd, ok := bsonutil.Field(body, "customData"); ok {
		if u.CustomData, ok = cd.(bson.D); !ok {
			return nil, mongoerr.New(mongoerr.BadValue, "\"customData\" must be an object")
		}
	}
	if err := m.saveUser(u); err != nil {
		return nil, err
	}
	m.log.Info("user created", "user", n.User, "db", n.DB, "remote", c.RemoteAddr())
	return bson.D{}, nil
}

// newUserCredentials are a new user's: derived from pwd, or external for
// a user in $external (which may not have a password).
func newUserCredentials(n UserName, body bson.D) (Credentials, error) {
	creds, err := credentialsArg(n, body, nil)
	switch {
	case err != nil:
		return nil, err
	case n.DB == externalDB && creds != nil:
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot set the password for users defined on the '$external' database")
	case n.DB == externalDB:
		return ExternalCredentials(), nil
	case creds == nil:
		return nil, mongoerr.New(mongoerr.BadValue,
			"Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db")
	}
	return creds, nil
}

// credentialsArg derives credentials from pwd, mechanisms and
// digestPassword; nil without pwd. keep are the mechanisms to keep when
// none are named (updateUser keeps the user's).
func credentialsArg(n UserName, body bson.D, keep []string) (Credentials, error) {
	pwdV, ok := bsonutil.Field(body, "pwd")
	if !ok {
		return nil, nil
	}
	pwd, ok := pwdV.(string)
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'pwd' is the wrong type, expected type 'string'")
	}
	if pwd == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "User passwords must not be empty")
	}
	mechs := keep
	if v, ok := bsonutil.Field(body, "mechanisms"); ok {
		var err error
		if mechs, err = mechanismsArg(v); err != nil {
			return nil, err
		}
	}
	digested := false
	if v, ok := bsonutil.Field(body, "digestPassword"); ok && v == false {
		digested = true
		if len(mechs) == 0 || slices.Contains(mechs, MechSHA256) {
			return nil, mongoerr.New(mongoerr.BadValue, "Use of SCRAM-SHA-256 requires undigested passwords")
		}
	}
	creds, err := NewCredentials(n.User, pwd, mechs, digested)
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.BadValue, "Error preparing password: %v", err)
	}
	return creds, nil
}

func mechanismsArg(v any) ([]string, error) {
	arr, ok := v.(bson.A)
	if !ok || len(arr) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "mechanisms field must not be empty")
	}
	var out []string
	for _, x := range arr {
		s, _ := x.(string)
		if _, ok := hashFor(s); !ok {
			return nil, mongoerr.Newf(mongoerr.BadValue, "Unknown auth mechanism '%v'", x)
		}
		out = append(out, s)
	}
	return out, nil
}

// existingRoles parses a roles array and checks every role exists.
func (m *Manager) existingRoles(v any, db string) ([]RoleName, error) {
	roles, err := parseRoleList(v, db)
	if err != nil {
		return nil, err
	}
	for _, r := range roles {
		if !m.roleExists(r) {
			return nil, mongoerr.Newf(mongoerr.RoleNotFound, "Could not find role: %s", r)
		}
	}
	return roles, nil
}

func (m *Manager) existingUser(name, db string) (*User, error) {
	n := UserName{User: name, DB: db}
	u := m.lookupUser(n)
	if u == nil {
		return nil, mongoerr.Newf(mongoerr.UserNotFound, "User %s not found", n)
	}
	cp := *u
	return &cp, nil
}

func cmdUpdateUser(m *Manager, _ Conn, db string, body bson.D) (bson.D, error) {
	name, err := userArg("updateUser", body)
	if err != nil {
		return nil, err
	}
	_, hasPwd := bsonutil.Field(body, "pwd")
	rolesV, hasRoles := bsonutil.Field(body, "roles")
	cd, hasCD := bsonutil.Field(body, "customData")
	_, hasMechs := bsonutil.Field(body, "mechanisms")
	if !hasPwd && !hasRoles && !hasCD && !hasMechs {
		return nil, mongoerr.New(mongoerr.BadValue, "Must specify at least one field to update in updateUser")
	}
	u, err := m.existingUser(name, db)
	if err != nil {
		return nil, err
	}
	if hasRoles {
		if u.Roles, err = m.existingRoles(rolesV, db); err != nil {
			return nil, err
		}
	}
	if hasCD {
		if u.CustomData, hasCD = cd.(bson.D); !hasCD {
			return nil, mongoerr.New(mongoerr.BadValue, "\"customData\" must be an object")
		}
	}
	if hasPwd {
		if u.Credentials, err = credentialsArg(u.Name, body, u.Credentials.Mechanisms()); err != nil {
			return nil, err
		}
	} else if hasMechs {
		return nil, mongoerr.New(mongoerr.BadValue, "mechanisms field must be a subset of previously set mechanisms")
	}
	return bson.D{}, m.saveUser(u)
}

func cmdDropUser(m *Manager, _ Conn, db string, body bson.D) (bson.D, error) {
	name, err := userArg("dropUser", body)
	if err != nil {
		return nil, err
	}
	n := UserName{User: name, DB: db}
	if m.lookupUser(n) == nil {
		return nil, mongoerr.Newf(mongoerr.UserNotFound, "User '%s' not found", n)
	}
	return bson.D{}, m.deleteUser(n)
}

func cmdDropAllUsers(m *Manager, _ Conn, db string, _ bson.D) (bson.D, error) {
	n := int32(0)
	for _, u := range m.usersOf(db) {
		if err := m.deleteUser(u.Name); err != nil {
			return nil, err
		}
		n++
	}
	return bson.D{{Key: "n", Value: n}}, nil
}

func cmdGrantRoles(m *Manager, _ Conn, db string, body bson.D) (bson.D, error) {
	return m.changeRoles(db, "grantRolesToUser", body, func(have []RoleName, r RoleName) []RoleName {
		for _, x := range have {
			if x == r {
				return have
			}
		}
		return append(have, r)
	})
}

func cmdRevokeRoles(m *Manager, _ Conn, db string, body bson.D) (bson.D, error) {
	return m.changeRoles(db, "revokeRolesFromUser", body, removeRole)
}

func removeRole(have []RoleName, r RoleName) []RoleName {
	out := have[:0:0]
	for _, x := range have {
		if x != r {
			out = append(out, x)
		}
	}
	return out
}

func (m *Manager) changeRoles(db, cmd string, body bson.D, apply func([]RoleName, RoleName) []RoleName) (bson.D, error) {
	name, err := userArg(cmd, body)
	if err != nil {
		return nil, err
	}
	rolesV, ok := bsonutil.Field(body, "roles")
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.roles' is missing but a required field", cmd)
	}
	roles, err := m.existingRoles(rolesV, db)
	if err != nil {
		return nil, err
	}
	u, err := m.existingUser(name, db)
	if err != nil {
		return nil, err
	}
	u.Roles = append([]RoleName(nil), u.Roles...)
	for _, r := range roles {
		u.Roles = apply(u.Roles, r)
	}
	return bson.D{}, m.saveUser(u)
}
