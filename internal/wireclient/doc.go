// Package wireclient is the small MongoDB wire-protocol client a router
// uses to talk to shards and config servers: it runs a command as OP_MSG
// (with $db) on a pooled connection to a host, dials with a timeout,
// optionally over TLS, and logs each new connection in with SCRAM —
// normally as the keyFile's internal user __system, as mongod's members
// and mongos do. A cancelled context closes the connection it was using.
// A ReplicaSet sends each command to a set's primary, finding it again
// after an election. Framing is internal/wire's; SCRAM is internal/auth's
// client side.
package wireclient
