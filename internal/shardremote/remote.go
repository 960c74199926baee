package shardremote

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// SetHosts reads a replica set connection string, "set/host:port,…", as
// config.shards' host and the shardIdentity's configsvrConnectionString
// hold it; a bare list of hosts is taken as it is.
func SetHosts(conn string) []string {
	if _, list, ok := strings.Cut(conn, "/"); ok {
		conn = list
	}
	if conn == "" {
		return nil
	}
	return strings.Split(conn, ",")
}

// primaryOf finds the primary of the replica set whose members are
// hosts: a member that says it is writable, or the one a member names.
func primaryOf(ctx context.Context, client Runner, hosts []string) (string, error) {
	for _, host := range hosts {
		reply, err := client.Run(ctx, host, "admin", bson.D{{Key: "hello", Value: int32(1)}})
		if err != nil {
			continue
		}
		if v, _ := bsonutil.Field(reply, "isWritablePrimary"); v == true {
			return host, nil
		}
		if p, ok := bsonutil.Field(reply, "primary"); ok {
			if s, _ := p.(string); s != "" {
				return s, nil
			}
		}
	}
	return "", mongoerr.Newf(mongoerr.HostUnreachable, "no primary found among %s", strings.Join(hosts, ","))
}

// RunOnPrimary runs cmd on the primary of the set at hosts and turns an
// error reply into an error with its code.
func RunOnPrimary(ctx context.Context, client Runner, hosts []string, db string, cmd bson.D) (bson.D, error) {
	host, err := primaryOf(ctx, client, hosts)
	if err != nil {
		return nil, err
	}
	return RunOn(ctx, client, host, db, cmd)
}

// sendAttempts bounds how often a command whose reply was lost is sent
// again: a pooled connection to a member that restarted fails once
// before a new one is dialled. Every command of the migration protocol
// may be sent twice (the clone and catch-up replies are numbered).
const sendAttempts = 3

// runOn runs cmd on host; an error reply is an error with its code and
// message, a lost reply (after sendAttempts) an *Unanswered.
func RunOn(ctx context.Context, client Runner, host, db string, cmd bson.D) (bson.D, error) {
	var reply bson.D
	var err error
	for attempt := 0; attempt < sendAttempts; attempt++ {
		if reply, err = client.Run(ctx, host, db, cmd); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return nil, &Unanswered{host: host, cmd: cmd[0].Key, err: err}
	}
	if ok, _ := bsonutil.Field(reply, "ok"); !bsonutil.TrueValue(ok) {
		code, _ := bsonutil.Field(reply, "code")
		msg, _ := bsonutil.Field(reply, "errmsg")
		n, _ := code.(int32)
		return nil, mongoerr.Newf(mongoerr.Code(n), "%s on %s: %v", cmd[0].Key, host, msg)
	}
	return reply, nil
}

// Unanswered is a command whose reply was lost: whether it ran is not
// known.
type Unanswered struct {
	host, cmd string
	err       error
}

func (e *Unanswered) Error() string {
	return fmt.Sprintf("shardstate: %s on %s got no reply: %v", e.cmd, e.host, e.err)
}

// Unwrap gives the cause and, for a caller that answers a client with
// its code, HostUnreachable, as mongod answers a command whose shard or
// config server did not reply (a bare network error would be an
// InternalError). A cause that has a code of its own keeps it.
func (e *Unanswered) Unwrap() []error {
	return []error{e.err, mongoerr.Newf(mongoerr.HostUnreachable, "%s on %s got no reply: %v", e.cmd, e.host, e.err)}
}

// IsUnanswered reports an error of a command whose reply was lost.
func IsUnanswered(err error) bool {
	var u *Unanswered
	return errors.As(err, &u)
}
