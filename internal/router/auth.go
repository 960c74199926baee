package router

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// Client authentication through the router, as mongos does it: users and
// roles live in admin.system.users and admin.system.roles on the config
// servers. The router keeps a copy in an auth.Manager (the same SCRAM
// conversations, roles and privilege table as a mongod's), logs clients
// in against it and authorizes every command before routing it. The user
// and role commands run on the config servers' primary, whose own
// Manager stores them; the router then reads them again.

// usersReadTimeout bounds one read of the users and roles from the
// config servers.
const usersReadTimeout = 10 * time.Second

// newAuth makes the router's Manager: access control on with a keyFile,
// whose __system user internal clients may log in as.
func (r *Router) newAuth() *auth.Manager {
	return auth.NewRemoteManager(r.loadAuthDocs, auth.Config{
		Enabled: r.cfg.RequireAuth, KeyFile: r.cfg.KeyFile, Logger: r.log,
	})
}

// loadAuthDocs reads admin.<coll> (system.users or system.roles) from the
// config servers with majority read concern.
func (r *Router) loadAuthDocs(coll string) ([]bson.D, error) {
	ctx, cancel := context.WithTimeout(context.Background(), usersReadTimeout)
	defer cancel()
	op := &operation{ctx: ctx, db: "admin"}
	cmd := bson.D{{Key: "find", Value: coll}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "majority"}}}}
	reply, err := r.call(op, r.config, "admin", cmd)
	if err != nil {
		return nil, err
	}
	return r.drain(op, r.config, "admin", coll, reply)
}

// reloadUsers reads the users and roles again. A failure keeps the copy
// the router has: the config servers may be electing.
func (r *Router) reloadUsers() {
	if err := r.auth.Reload(); err != nil {
		r.log.Warn("cannot read users and roles from the config servers", "err", err)
	}
}

// authorize refuses a command the connection's user may not run.
func (r *Router) authorize(op *operation) error {
	return r.auth.Authorize(op.conn, op.db, op.name, op.body)
}

// authCommandTable is the router's handlers for the commands of
// internal/auth: a login's (saslStart, logout, connectionStatus, ...)
// run on the router's Manager, the user and role commands on the config
// servers.
func authCommandTable() map[string]handlerFunc {
	table := map[string]handlerFunc{}
	for _, name := range auth.CommandNames() {
		table[name] = cmdUserAdmin
		if auth.IsSessionCommand(name) {
			table[name] = cmdLogin
		}
	}
	return table
}

// cmdLogin runs a login command on the router's Manager; a saslStart
// reads the users first, so that a user created through another router
// can log in at once (with access control off too, as a mongod without
// --auth still logs users in).
func cmdLogin(r *Router, op *operation) (bson.D, error) {
	if op.name == "saslStart" {
		r.reloadUsers()
	}
	return r.auth.Run(op.conn, op.db, op.name, op.body)
}

// cmdUserAdmin runs a user or role command on the config servers, where
// users are stored, then reads them again so that this router's logins
// and authorizations follow at once.
func cmdUserAdmin(r *Router, op *operation) (bson.D, error) {
	reply, err := r.call(op, r.config, op.db, passThrough(op.body))
	if err != nil {
		return nil, err
	}
	r.reloadUsers()
	return forwardable(reply), nil
}

// authHelloFields are what hello adds for authentication (the user's
// mechanisms, a speculative saslStart), read against fresh users.
func (r *Router) authHelloFields(op *operation) bson.D {
	_, speculative := bsonutil.Field(op.body, "speculativeAuthenticate")
	_, mechs := bsonutil.Field(op.body, "saslSupportedMechs")
	if !speculative && !mechs {
		return nil
	}
	r.reloadUsers()
	return r.auth.HelloFields(op.conn, op.body)
}
