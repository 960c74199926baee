// Package auth is Mayfly's access control, as mongod does it: users and
// roles stored in admin.system.users and admin.system.roles with salted
// SCRAM keys (never a password), SCRAM-SHA-1 and SCRAM-SHA-256
// conversations over saslStart/saslContinue, the built-in roles and their
// privileges, the table of privileges each command needs, cursor
// ownership, the localhost exception and the keyFile shared by replica set
// members.
//
// The command layer calls Manager.Authorize once per command, before the
// command runs; everything else about who may do what lives here.
package auth
