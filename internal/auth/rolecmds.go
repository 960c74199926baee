package auth

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// existingRole returns a copy of a user-defined role, refusing built-in
// ones as mongod does.
func (m *Manager) existingRole(cmd string, body bson.D, db string) (*Role, error) {
	name, err := userArg(cmd, body)
	if err != nil {
		return nil, err
	}
	n := RoleName{Role: name, DB: db}
	if IsBuiltin(n) {
		return nil, mongoerr.Newf(mongoerr.InvalidRoleModification, "Cannot update built-in role: %s", n)
	}
	r := m.lookupRole(n)
	if r == nil {
		return nil, mongoerr.Newf(mongoerr.RoleNotFound, "Role %s not found", n)
	}
	cp := *r
	cp.Privileges = append([]Privilege(nil), r.Privileges...)
	cp.Roles = append([]RoleName(nil), r.Roles...)
	return &cp, nil
}

// saveRoleChecked stores r after checking its privileges stay in its
// database and its roles do not make a cycle.
func (m *Manager) saveRoleChecked(r *Role) error {
	if err := checkPrivilegesStayIn(r.Name.DB, r.Privileges); err != nil {
		return err
	}
	for _, sub := range r.Roles {
		if sub == r.Name || m.inherits(sub, r.Name, map[RoleName]bool{}) {
			return mongoerr.Newf(mongoerr.InvalidRoleModification,
				"Granting %s to %s would introduce a cycle in the role graph", sub, r.Name)
		}
	}
	return m.saveRole(r)
}

// inherits reports whether role from reaches target through the roles it
// inherits.
func (m *Manager) inherits(from, target RoleName, seen map[RoleName]bool) bool {
	if seen[from] {
		return false
	}
	seen[from] = true
	def := m.lookupRole(from)
	if def == nil {
		return false
	}
	for _, r := range def.Roles {
		if r == target || m.inherits(r, target, seen) {
			return true
		}
	}
	return false
}

func cmdUpdateRole(m *Manager, _ Conn, db string, body bson.D) (bson.D, error) {
	r, err := m.existingRole("updateRole", body, db)
	if err != nil {
		return nil, err
	}
	privV, hasPrivs := bsonutil.Field(body, "privileges")
	rolesV, hasRoles := bsonutil.Field(body, "roles")
	if !hasPrivs && !hasRoles {
		return nil, mongoerr.New(mongoerr.BadValue, "Must specify at least one field to update in updateRole")
	}
	if hasPrivs {
		if r.Privileges, err = parsePrivileges(privV); err != nil {
			return nil, err
		}
	}
	if hasRoles {
		if r.Roles, err = m.existingRoles(rolesV, db); err != nil {
			return nil, err
		}
	}
	return bson.D{}, m.saveRoleChecked(r)
}

func cmdGrantPrivileges(m *Manager, _ Conn, db string, body bson.D) (bson.D, error) {
	return m.changePrivileges("grantPrivilegesToRole", db, body, func(r *Role, p Privilege) {
		r.Privileges = append(r.Privileges, p)
	})
}

func cmdRevokePrivileges(m *Manager, _ Conn, db string, body bson.D) (bson.D, error) {
	return m.changePrivileges("revokePrivilegesFromRole", db, body, func(r *Role, p Privilege) {
		kept := r.Privileges[:0:0]
		for _, have := range r.Privileges {
			if have.Resource == p.Resource {
				have.Actions = without(have.Actions, p.Actions)
				if len(have.Actions) == 0 {
					continue
				}
			}
			kept = append(kept, have)
		}
		r.Privileges = kept
	})
}

func without(actions, remove []string) []string {
	var out []string
	for _, a := range actions {
		drop := false
		for _, x := range remove {
			drop = drop || a == x
		}
		if !drop {
			out = append(out, a)
		}
	}
	return out
}

func (m *Manager) changePrivileges(cmd, db string, body bson.D, apply func(*Role, Privilege)) (bson.D, error) {
	r, err := m.existingRole(cmd, body, db)
	if err != nil {
		return nil, err
	}
	v, ok := bsonutil.Field(body, "privileges")
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.privileges' is missing but a required field", cmd)
	}
	privs, err := parsePrivileges(v)
	if err != nil {
		return nil, err
	}
	for _, p := range privs {
		apply(r, p)
	}
	return bson.D{}, m.saveRoleChecked(r)
}

func cmdGrantRolesToRole(m *Manager, _ Conn, db string, body bson.D) (bson.D, error) {
	return m.changeInherited("grantRolesToRole", db, body, func(have []RoleName, r RoleName) []RoleName {
		if hasRole(have, r) {
			return have
		}
		return append(have, r)
	})
}

func cmdRevokeRolesFromRole(m *Manager, _ Conn, db string, body bson.D) (bson.D, error) {
	return m.changeInherited("revokeRolesFromRole", db, body, removeRole)
}

func (m *Manager) changeInherited(cmd, db string, body bson.D, apply func([]RoleName, RoleName) []RoleName) (bson.D, error) {
	r, err := m.existingRole(cmd, body, db)
	if err != nil {
		return nil, err
	}
	v, ok := bsonutil.Field(body, "roles")
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.roles' is missing but a required field", cmd)
	}
	roles, err := m.existingRoles(v, db)
	if err != nil {
		return nil, err
	}
	for _, x := range roles {
		r.Roles = apply(r.Roles, x)
	}
	return bson.D{}, m.saveRoleChecked(r)
}

func cmdDropAllRoles(m *Manager, c Conn, db string, _ bson.D) (bson.D, error) {
	n := int32(0)
	for _, r := range m.rolesOf(db) {
		if _, err := cmdDropRole(m, c, db, bson.D{{Key: "dropRole", Value: r.Name.Role}}); err != nil {
			return nil, err
		}
		n++
	}
	return bson.D{{Key: "n", Value: n}}, nil
}
