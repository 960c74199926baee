package backup

import (
	"errors"
	"os"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage"
)

// Checkpoint writes a consistent copy of the whole data directory, while
// writes go on, to dir, which must not exist yet; inMemory says the
// server has no data directory, so nothing to copy.
func Checkpoint(engine storage.Engine, inMemory bool, dir string) error {
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		return mongoerr.Newf(mongoerr.BadValue, "backup directory %s already exists", dir)
	}
	cp, ok := engine.(storage.Checkpointer)
	if !ok || inMemory {
		return mongoerr.New(mongoerr.IllegalOperation, "a server running in memory has no files to back up")
	}
	if err := cp.Checkpoint(dir); err != nil {
		return mongoerr.Newf(mongoerr.OperationFailed, "backup to %s failed: %v", dir, err)
	}
	return nil
}
