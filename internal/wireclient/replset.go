package wireclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// primaryWait bounds how long a command waits for a replica set to show a
// primary (an election, a restart) before it fails.
const primaryWait = 15 * time.Second

// refusedAsNotPrimary reports the answers of a member that did not run
// the command because it is not the primary: the command can go to the
// primary as it is.
func refusedAsNotPrimary(c mongoerr.Code) bool {
	switch c {
	case mongoerr.NotWritablePrimary, mongoerr.NotPrimaryNoSecondaryOk, mongoerr.NotPrimaryOrSecondary:
		return true
	}
	return false
}

// interruptedByStepDown reports the answers of a primary that stepped
// down while running the command, which may have taken effect.
func interruptedByStepDown(c mongoerr.Code) bool {
	return c == mongoerr.PrimarySteppedDown || c == mongoerr.InterruptedDueToReplStateChange
}

// SafeToResend reports whether a command may be sent again when it is
// not known whether it ran: a read, or a retryable write (the shard
// recognises its txnNumber and statement ids). Anything else could take
// effect twice.
func SafeToResend(cmd bson.D) bool {
	if _, retryable := bsonutil.Field(cmd, "txnNumber"); retryable {
		return true
	}
	switch cmd[0].Key {
	case "hello", "find", "count", "distinct", "aggregate", "listIndexes", "listCollections",
		"listDatabases", "explain", "create", "createIndexes", "collMod":
		return true
	}
	return false
}

// ReplicaSet is a remote replica set (the config servers or a shard) that
// the router sends commands to, always to its primary.
type ReplicaSet struct {
	name   string
	seeds  []string
	client *Client
	clock  clock.Clock

	mu      sync.Mutex
	primary string // "" until found, and after it fails
}

// ParseSetString reads "setName/host1:port,host2:port".
func ParseSetString(s string) (name string, hosts []string, err error) {
	name, list, ok := strings.Cut(s, "/")
	if !ok || name == "" || list == "" {
		return "", nil, fmt.Errorf("%q is not of the form setName/host:port", s)
	}
	for _, h := range strings.Split(list, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return "", nil, fmt.Errorf("%q names no host", s)
	}
	return name, hosts, nil
}

// NewReplicaSet is the set called name, found through its seeds.
func NewReplicaSet(name string, seeds []string, client *Client, clk clock.Clock) *ReplicaSet {
	return &ReplicaSet{name: name, seeds: seeds, client: client, clock: clk}
}

// Run sends cmd to the primary and returns its reply, whatever its ok.
// A member that is not (or no longer) the primary, or cannot be reached,
// makes it look for the primary again, within primaryWait; a command
// that may have run is sent again only if that is safe (SafeToResend).
func (rs *ReplicaSet) Run(ctx context.Context, db string, cmd bson.D) (bson.D, error) {
	deadline := rs.clock.Now().Add(primaryWait)
	for attempt := 0; ; attempt++ {
		host, err := rs.findPrimary(ctx)
		if err == nil {
			var reply bson.D
			reply, err = rs.client.Run(ctx, host, db, cmd)
			code := ReplyCode(reply)
			if err == nil && !refusedAsNotPrimary(code) && !interruptedByStepDown(code) {
				return reply, nil
			}
			rs.forget(host)
			if (err != nil || interruptedByStepDown(code)) && !SafeToResend(cmd) {
				return reply, rs.unreachableOrNil(err)
			}
			if err == nil {
				err = MongoError(reply)
			}
		}
		if ctx.Err() != nil || rs.clock.Now().After(deadline) {
			return nil, rs.unreachable(err)
		}
		if !clock.Sleep(ctx, rs.clock, time.Duration(min(attempt+1, 10))*50*time.Millisecond) {
			return nil, rs.unreachable(ctx.Err())
		}
	}
}

// unreachableOrNil is unreachable(err) for an error, nil for none (the
// reply then says what happened).
func (rs *ReplicaSet) unreachableOrNil(err error) error {
	if err == nil {
		return nil
	}
	return rs.unreachable(err)
}

// unreachable is mongos's answer when a set cannot be reached: drivers
// must not take it as the router being down.
func (rs *ReplicaSet) unreachable(cause error) error {
	var ne *NetworkError
	if errors.As(cause, &ne) || cause == nil || errors.Is(cause, errNoPrimary) {
		return mongoerr.Newf(mongoerr.HostUnreachable, "Could not find host matching read preference { mode: \"primary\" } for set %s", rs.name)
	}
	if me := mongoerr.As(cause); me.Code != mongoerr.InternalError {
		return me
	}
	return fmt.Errorf("replica set %s: %w", rs.name, cause)
}

var errNoPrimary = errors.New("no primary")

func (rs *ReplicaSet) forget(host string) {
	rs.mu.Lock()
	if rs.primary == host {
		rs.primary = ""
	}
	rs.mu.Unlock()
}

// findPrimary returns the known primary or asks each seed's hello.
func (rs *ReplicaSet) findPrimary(ctx context.Context) (string, error) {
	rs.mu.Lock()
	p := rs.primary
	rs.mu.Unlock()
	if p != "" {
		return p, nil
	}
	for _, h := range rs.seeds {
		hello, err := rs.Hello(ctx, h)
		if err != nil {
			continue
		}
		if v, _ := bsonutil.Field(hello, "isWritablePrimary"); v == true {
			p = h
		} else if named, ok := bsonutil.Field(hello, "primary"); ok {
			p, _ = named.(string)
		}
		if p != "" {
			break
		}
	}
	if p == "" {
		return "", errNoPrimary
	}
	rs.mu.Lock()
	rs.primary = p
	rs.mu.Unlock()
	return p, nil
}

// Hello asks host, one of the set's members, for its hello.
func (rs *ReplicaSet) Hello(ctx context.Context, host string) (bson.D, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	reply, err := rs.client.Run(ctx, host, "admin", bson.D{{Key: "hello", Value: int32(1)}})
	if err != nil {
		return nil, err
	}
	return reply, MongoError(reply)
}

// ReplyCode is a reply's error code, 0 for a success.
func ReplyCode(reply bson.D) mongoerr.Code {
	if ok, _ := bsonutil.Field(reply, "ok"); bsonutil.TrueValue(ok) {
		return 0
	}
	c, _ := bsonutil.Field(reply, "code")
	if n, _ := c.(int32); n != 0 {
		return mongoerr.Code(n)
	}
	return mongoerr.InternalError // a failure without a code still fails
}

// MongoError is a reply's error as a *mongoerr.Error, to answer with or
// to act on by code; nil for ok: 1.
func MongoError(reply bson.D) error {
	code := ReplyCode(reply)
	if code == 0 {
		return nil
	}
	msg, _ := bsonutil.Field(reply, "errmsg")
	s, _ := msg.(string)
	return mongoerr.New(code, s)
}

// Name is the set's name.
func (rs *ReplicaSet) Name() string { return rs.name }

// ConnectionString is "setName/seed1,seed2", as mongos names a set.
func (rs *ReplicaSet) ConnectionString() string { return rs.name + "/" + strings.Join(rs.seeds, ",") }
