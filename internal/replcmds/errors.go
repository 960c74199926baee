package replcmds

import (
	"errors"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/repl"
)

// Error gives the replica set's errors MongoDB's codes; any other error
// is returned as it is.
func Error(err error) error {
	var cfgErr *repl.ConfigError
	var incompatible *repl.IncompatibleConfigError
	var offErr *repl.ClockOffsetError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &offErr):
		return mongoerr.New(mongoerr.NotPrimaryOrSecondary, offErr.Error())
	case errors.Is(err, repl.ErrNotPrimary):
		return mongoerr.New(mongoerr.NotWritablePrimary, "not primary")
	case errors.Is(err, repl.ErrNotPrimaryNoSecondaryOk):
		return mongoerr.New(mongoerr.NotPrimaryNoSecondaryOk, "not primary and secondaryOk=false")
	case errors.Is(err, repl.ErrNotPrimaryOrSecondary):
		return mongoerr.New(mongoerr.NotPrimaryOrSecondary, "node is not in primary or recovering state")
	case errors.Is(err, repl.ErrStateChange):
		return mongoerr.New(mongoerr.InterruptedDueToReplStateChange, "operation was interrupted because a replica set state change happened")
	case errors.Is(err, repl.ErrShutdown):
		return mongoerr.New(mongoerr.InterruptedAtShutdown, "interrupted at shutdown")
	case errors.Is(err, repl.ErrAlreadyInitialized):
		return mongoerr.New(mongoerr.AlreadyInitialized, "already initialized")
	case errors.Is(err, repl.ErrNotYetInitialized):
		return mongoerr.New(mongoerr.NotYetInitialized, "no replset config has been received")
	case errors.Is(err, repl.ErrNoCaughtUpSecondary):
		return mongoerr.New(mongoerr.ExceededTimeLimit, "No electable secondaries caught up as of the stepdown deadline. Please use the replSetStepDown command with the argument {force: true} to force node to step down.")
	case errors.Is(err, repl.ErrNotPrimaryOrSecondaryFreeze):
		return mongoerr.New(mongoerr.NotSecondary, err.Error())
	case errors.As(err, &cfgErr):
		return mongoerr.New(mongoerr.InvalidReplicaSetConfig, cfgErr.Msg)
	case errors.As(err, &incompatible):
		return mongoerr.New(mongoerr.NewReplicaSetConfigurationIncompatible, incompatible.Msg)
	}
	return err
}
