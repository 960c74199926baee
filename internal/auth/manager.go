package auth

import (
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
)

// UserName names a user: users live in the database they were created in.
type UserName struct {
	User string
	DB   string
}

func (u UserName) String() string { return u.User + "@" + u.DB }

func (u UserName) id() string { return u.DB + "." + u.User }

// User is one system.users entry, parsed once and kept in memory so that
// a login reads no storage and derives no keys.
type User struct {
	Name        UserName
	UserID      bson.Binary
	Roles       []RoleName
	Credentials Credentials
	CustomData  bson.D
}

// Role is a user-defined role from system.roles.
type Role struct {
	Name       RoleName
	Privileges []Privilege
	Roles      []RoleName
}

// Config configures a Manager.
type Config struct {
	// Enabled turns access control on (--auth, or a keyFile).
	Enabled bool
	// KeyFile, when set, is the replica set's shared key: it defines the
	// internal __system user members authenticate as.
	KeyFile *KeyFile
	Logger  *slog.Logger
}

// Manager holds users and roles and decides who may run what.
type Manager struct {
	cfg   Config
	log   *slog.Logger
	store persister

	mu    sync.RWMutex
	users map[string]*User
	roles map[string]*Role
	// gen changes with every user or role change; sessions recompute their
	// privileges when it moves.
	gen atomic.Uint64
	// monitor remembers HTTP logins to the metrics endpoint.
	monitor monitorLogins
}

// NewManager loads users and roles from store.
func NewManager(store *docstore.Store, cfg Config) (*Manager, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, store: persister{store: store}}
	if err := m.Reload(); err != nil {
		return nil, err
	}
	return m, nil
}

// Disabled returns a Manager with access control off, for servers and
// tests that do not configure one: user commands still work, as on a
// mongod started without --auth.
func Disabled(store *docstore.Store, logger *slog.Logger) *Manager {
	m, err := NewManager(store, Config{Logger: logger})
	if err != nil {
		logger.Error("cannot load users and roles", "err", err)
		m = &Manager{log: logger, users: map[string]*User{}, roles: map[string]*Role{}}
	}
	return m
}

// KeyFile returns the replica set key the server was started with, or nil.
func (m *Manager) KeyFile() *KeyFile { return m.cfg.KeyFile }

// Enabled reports whether access control is on.
func (m *Manager) Enabled() bool { return m.cfg.Enabled }

// Reload rereads admin.system.users and admin.system.roles (after a
// direct write to them, or a restore).
func (m *Manager) Reload() error {
	users, err := m.loadUsers()
	if err != nil {
		return err
	}
	roles, err := m.loadRoles()
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.users, m.roles = users, roles
	m.mu.Unlock()
	m.gen.Add(1)
	return nil
}

func (m *Manager) loadUsers() (map[string]*User, error) {
	return loadDocs(m, usersColl, parseUserDoc, func(u *User) string { return u.Name.id() })
}

func (m *Manager) loadRoles() (map[string]*Role, error) {
	return loadDocs(m, rolesColl, parseRoleDoc, func(r *Role) string { return r.Name.DB + "." + r.Name.Role })
}

// loadDocs parses every document of admin.<coll>, skipping (with a
// warning) those it cannot read, so one bad entry locks nobody out.
func loadDocs[T any](m *Manager, coll string, parse func(bson.D) (T, error), key func(T) string) (map[string]T, error) {
	docs, err := m.store.load(coll)
	if err != nil {
		return nil, err
	}
	out := map[string]T{}
	for _, d := range docs {
		v, err := parse(d)
		if err != nil {
			m.log.Warn("skipping malformed document", "ns", adminDB+"."+coll, "id", fmt.Sprint(firstValue(d)), "err", err)
			continue
		}
		out[key(v)] = v
	}
	return out, nil
}

func firstValue(d bson.D) any {
	if len(d) == 0 {
		return nil
	}
	return d[0].Value
}

// lookupUser returns the user, the keyFile's __system user included.
func (m *Manager) lookupUser(n UserName) *User {
	if m.cfg.KeyFile != nil && n == systemUser {
		return m.cfg.KeyFile.user
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.users[n.id()]
}

func (m *Manager) lookupRole(n RoleName) *Role {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.roles[n.DB+"."+n.Role]
}

// HasUsers reports whether any user exists (the localhost exception ends
// with the first).
func (m *Manager) HasUsers() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.users) > 0
}

func (m *Manager) usersOf(db string) []*User {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*User
	for _, u := range m.users {
		if db == "" || u.Name.DB == db {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name.id() < out[j].Name.id() })
	return out
}

func (m *Manager) rolesOf(db string) []*Role {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*Role
	for _, r := range m.roles {
		if db == "" || r.Name.DB == db {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name.String() < out[j].Name.String() })
	return out
}

// roleExists reports whether r is built in or defined.
func (m *Manager) roleExists(r RoleName) bool {
	return IsBuiltin(r) || m.lookupRole(r) != nil
}

// privilegesOf resolves roles, with every role they inherit, into
// privileges; seen collects the roles visited (inheritedRoles).
func (m *Manager) privilegesOf(roles []RoleName, seen map[RoleName]bool) []Privilege {
	var out []Privilege
	for _, r := range roles {
		if seen[r] {
			continue
		}
		seen[r] = true
		if p, ok := builtinPrivileges(r); ok {
			out = append(out, p...)
			continue
		}
		if def := m.lookupRole(r); def != nil {
			out = append(out, def.Privileges...)
			out = append(out, m.privilegesOf(def.Roles, seen)...)
		}
	}
	return out
}

// saveUser writes u and makes it visible.
func (m *Manager) saveUser(u *User) error {
	if err := m.store.put(usersColl, u.Name.id(), userDoc(u)); err != nil {
		return err
	}
	m.mu.Lock()
	m.users[u.Name.id()] = u
	m.mu.Unlock()
	m.gen.Add(1)
	return nil
}

func (m *Manager) deleteUser(n UserName) error {
	if err := m.store.remove(usersColl, n.id()); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.users, n.id())
	m.mu.Unlock()
	m.gen.Add(1)
	return nil
}

func (m *Manager) saveRole(r *Role) error {
	id := r.Name.DB + "." + r.Name.Role
	if err := m.store.put(rolesColl, id, roleDoc(r)); err != nil {
		return err
	}
	m.mu.Lock()
	m.roles[id] = r
	m.mu.Unlock()
	m.gen.Add(1)
	return nil
}

func (m *Manager) deleteRole(n RoleName) error {
	id := n.DB + "." + n.Role
	if err := m.store.remove(rolesColl, id); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.roles, id)
	m.mu.Unlock()
	m.gen.Add(1)
	return nil
}

// AfterCommand rereads users and roles when a command may have written
// their collections directly (insert into admin.system.users, a restore,
// dropping the admin database).
func (m *Manager) AfterCommand(db, name string, body bson.D) {
	if db != adminDB {
		return
	}
	switch name {
	case "insert", "update", "delete", "findAndModify", "findandmodify", "drop", "dropDatabase", "renameCollection":
	default:
		return
	}
	coll := firstString(body)
	if name == "dropDatabase" || name == "renameCollection" || coll == usersColl || coll == rolesColl {
		if err := m.Reload(); err != nil {
			m.log.Error("cannot reload users and roles", "err", err)
		}
	}
}
