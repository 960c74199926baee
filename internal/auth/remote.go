package auth

import "go.mongodb.org/mongo-driver/v2/bson"

// NewRemoteManager returns a Manager whose users and roles are stored
// elsewhere and read by load (a router reads admin.system.users and
// admin.system.roles from the config servers, as mongos does). It writes
// none itself: the user and role commands run where the users are
// stored, and Reload reads their result. It holds no user until the
// first Reload.
func NewRemoteManager(load func(coll string) ([]bson.D, error), cfg Config) *Manager {
	m := Disabled(nil, cfg.Logger)
	m.cfg, m.store = cfg, persister{remote: load}
	if m.cfg.Logger == nil {
		m.cfg.Logger = m.log
	}
	return m
}

// IsSessionCommand reports the commands of CommandNames that act on the
// connection's login (run where the client is connected), not on the
// stored users and roles.
func IsSessionCommand(name string) bool {
	switch name {
	case "saslStart", "saslContinue", "authenticate", "logout", "connectionStatus":
		return true
	}
	return false
}
