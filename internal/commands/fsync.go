package commands

import (
	"path/filepath"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/backup"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/opstats"
)

// waitForWrites holds a writing command while the fsync lock is held.
func (h *Handler) waitForWrites(r *request) error {
	if !opstats.WritesData(r.name) {
		return nil
	}
	if err := h.deps.Fsync.Wait(r.ctx); err != nil {
		return interruptError(err)
	}
	return nil
}

func requireAdmin(r *request) error {
	if r.db != "admin" {
		return mongoerr.Newf(mongoerr.Unauthorized, "%s may only be run against the admin database.", r.name)
	}
	return nil
}

func cmdFsync(h *Handler, r *request) (bson.D, error) {
	if err := requireAdmin(r); err != nil {
		return nil, err
	}
	if err := checkFields(r, "lock", "async", "forBackup", "fsyncLockAcquisitionTimeoutMillis"); err != nil {
		return nil, err
	}
	lock, err := optBool(r, "lock")
	if err != nil {
		return nil, err
	}
	if err := h.deps.Store.Sync(); err != nil {
		return nil, err
	}
	if !lock {
		return bson.D{{Key: "numFiles", Value: int32(1)}}, nil
	}
	n := h.deps.Fsync.Lock()
	h.deps.Logger.Info("fsync lock taken: writes wait until fsyncUnlock", "lockCount", n)
	return bson.D{
		{Key: "info", Value: "now locked against writes, use db.fsyncUnlock() to unlock"},
		{Key: "lockCount", Value: n},
		{Key: "seeAlso", Value: "http://dochub.mongodb.org/core/fsynccommand"},
	}, nil
}

func cmdFsyncUnlock(h *Handler, r *request) (bson.D, error) {
	if err := requireAdmin(r); err != nil {
		return nil, err
	}
	left, ok := h.deps.Fsync.Unlock()
	if !ok {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "fsyncUnlock called when not locked")
	}
	h.deps.Logger.Info("fsync lock released", "lockCount", left)
	return bson.D{{Key: "info", Value: "fsyncUnlock completed"}, {Key: "lockCount", Value: left}}, nil
}

// cmdMayflyCheckpoint writes a consistent copy of the whole data
// directory, while writes go on, to `to`, a directory on the server's
// machine that must not exist yet: `mayfly backup` sends it, and `mayfly
// --dbpath DIR` then serves the copy.
func cmdMayflyCheckpoint(h *Handler, r *request) (bson.D, error) {
	if err := requireAdmin(r); err != nil {
		return nil, err
	}
	if err := checkFields(r, "to"); err != nil {
		return nil, err
	}
	v, _ := bsonutil.Field(r.body, "to")
	dir, ok := v.(string)
	if !ok || !filepath.IsAbs(dir) {
		return nil, mongoerr.New(mongoerr.BadValue, "mayflyCheckpoint needs 'to', an absolute path on the server's machine")
	}
	started := h.deps.Clock.Now()
	if err := backup.Checkpoint(h.deps.Store.Engine(), h.deps.DataDir == "", dir); err != nil {
		return nil, err
	}
	millis := h.deps.Clock.Now().Sub(started).Milliseconds()
	h.deps.Logger.Info("backup written", "to", dir, "ms", millis)
	return bson.D{{Key: "to", Value: dir}, {Key: "millis", Value: millis}}, nil
}
