package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage"
)

// refused wraps cause the way the storage engine and docstore wrap a write
// refused after a storage failure.
func refused(cause error) error {
	return fmt.Errorf("docstore: commit: pebblestore: commit: %w", fmt.Errorf("%w: %w", storage.ErrWriteFailed, cause))
}

func TestStorageErrorCodes(t *testing.T) {
	enospc := &os.PathError{Op: "write", Path: "db/000004.log", Err: syscall.ENOSPC}
	eio := &os.PathError{Op: "sync", Path: "db/000004.log", Err: syscall.EIO}
	cases := []struct {
		err     error
		code    mongoerr.Code
		msgPart string
	}{
		{refused(enospc), mongoerr.OutOfDiskSpace, "out of disk space: writes are refused until space is freed"},
		{refused(eio), mongoerr.UnknownError, "storage failure: writes are refused until the storage recovers"},
		{fmt.Errorf("docstore: scan: %w", storage.ErrInvalidated), mongoerr.QueryPlanKilled, "query plan killed"},
		{fmt.Errorf("docstore: scan: %w", context.DeadlineExceeded), mongoerr.MaxTimeMSExpired, "exceeded time limit"},
		{errors.New("something else"), mongoerr.InternalError, "something else"},
	}
	for _, c := range cases {
		got := mongoerr.As(clientError(c.err))
		if got.Code != c.code || !strings.Contains(got.Msg, c.msgPart) {
			t.Errorf("clientError(%v) = %v; want code %d with %q", c.err, got, c.code, c.msgPart)
		}
	}
	if got := mongoerr.As(clientError(refused(enospc))); !strings.Contains(got.Msg, "no space left on device") {
		t.Errorf("the cause is missing from %q", got.Msg)
	}
}
