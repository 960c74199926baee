package commands

import (
	"errors"
	"syscall"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/replcmds"
	"github.com/mayflydb/mayfly/internal/storage"
)

// clientError turns what a lower layer returned into the error a client
// gets: interrupted scans and storage failures have MongoDB codes of their
// own.
func clientError(err error) error { return replcmds.Error(storageError(interruptError(err))) }

// storageError gives the errors of a failed storage engine MongoDB's codes.
// A write refused after a storage failure is OutOfDiskSpace (14031, what
// mongod answers when its own file writes hit ENOSPC) for a full disk and
// UnknownError (8) for other I/O errors; reads keep working meanwhile, so
// the message says writes are what is refused. A scan whose iterator the
// engine's recovery reopen invalidated is QueryPlanKilled (175), as when
// mongod kills a running query. Anything else is returned as is.
func storageError(err error) error {
	switch {
	case errors.Is(err, storage.ErrInvalidated):
		return mongoerr.Newf(mongoerr.QueryPlanKilled, "query plan killed :: caused by :: the storage engine reopened to recover from a storage failure; run the query again")
	case !errors.Is(err, storage.ErrWriteFailed):
		return err
	case errors.Is(err, syscall.ENOSPC):
		return mongoerr.Newf(mongoerr.OutOfDiskSpace, "out of disk space: writes are refused until space is freed and the storage recovers :: caused by :: %v", err)
	}
	return mongoerr.Newf(mongoerr.UnknownError, "storage failure: writes are refused until the storage recovers :: caused by :: %v", err)
}
