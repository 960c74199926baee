package replcmds

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/repl"
)

// TestCommandsOnAStandalone: every replica set command, on a server
// started without --replSet, answers as mongod's do: NoReplicationEnabled
// (replSetGetStatus in its own words), and the test command not found
// without enableTestCommands.
func TestCommandsOnAStandalone(t *testing.T) {
	for name, run := range Commands() {
		c := cmdargs.Call{DB: "admin", Name: name, Body: bson.D{{Key: name, Value: int32(1)}}}
		want := errNoReplication()
		switch name {
		case "replSetGetStatus":
			want = mongoerr.New(mongoerr.NoReplicationEnabled, "not running with --replSet")
		case "mayflyReplPartition":
			want = mongoerr.Newf(mongoerr.CommandNotFound, "no such command: '%s'", name)
		}
		if _, err := run(context.Background(), Member{}, c); err == nil || err.Error() != want.Error() {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
	c := cmdargs.Call{DB: "admin", Name: "mayflyReplPartition", Body: bson.D{{Key: "mayflyReplPartition", Value: bson.A{}}}}
	if _, err := replPartition(context.Background(), Member{TestCommands: true}, c); err == nil || err.Error() != errNoReplication().Error() {
		t.Errorf("mayflyReplPartition with test commands: %v, want NoReplicationEnabled", err)
	}
}

// TestErrorCodes: each of internal/repl's errors, wrapped as its callers
// wrap them, becomes its MongoDB code; any other error stays as it is.
func TestErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code mongoerr.Code
	}{
		{repl.ErrNotPrimary, mongoerr.NotWritablePrimary},
		{repl.ErrNotPrimaryNoSecondaryOk, mongoerr.NotPrimaryNoSecondaryOk},
		{repl.ErrNotPrimaryOrSecondary, mongoerr.NotPrimaryOrSecondary},
		{repl.ErrStateChange, mongoerr.InterruptedDueToReplStateChange},
		{repl.ErrShutdown, mongoerr.InterruptedAtShutdown},
		{repl.ErrAlreadyInitialized, mongoerr.AlreadyInitialized},
		{repl.ErrNotYetInitialized, mongoerr.NotYetInitialized},
		{repl.ErrNoCaughtUpSecondary, mongoerr.ExceededTimeLimit},
		{repl.ErrNotPrimaryOrSecondaryFreeze, mongoerr.NotSecondary},
		{&repl.ConfigError{Msg: "bad"}, mongoerr.InvalidReplicaSetConfig},
		{&repl.IncompatibleConfigError{Msg: "old"}, mongoerr.NewReplicaSetConfigurationIncompatible},
	} {
		wrapped := fmt.Errorf("replica: %w", tc.err)
		if got := mongoerr.As(Error(wrapped)).Code; got != tc.code {
			t.Errorf("%v: code %v, want %v", tc.err, got, tc.code)
		}
	}
	other := errors.New("other")
	if Error(other) != other || Error(nil) != nil {
		t.Error("an error that is not the replica set's changed")
	}
}
