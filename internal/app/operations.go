package app

import (
	"log/slog"

	"github.com/mayflydb/mayfly/internal/commands"
	"github.com/mayflydb/mayfly/internal/logring"
	"github.com/mayflydb/mayfly/internal/opstats"
)

// operations are the parts an operator watches and drives the server
// through: command statistics, the recent log for getLog, the fsync lock.
type operations struct {
	stats *opstats.Stats
	ring  *logring.Ring
	fsync *commands.FsyncLock
}

// newOperations makes them, and routes cfg's logger through the ring.
func newOperations(cfg *Config) operations {
	ops := operations{stats: opstats.New(), ring: logring.New(), fsync: commands.NewFsyncLock()}
	cfg.Logger = slog.New(logring.NewHandler(cfg.Logger.Handler(), ops.ring))
	return ops
}

// dataDir is the data directory, or "" in memory.
func (a *App) dataDir() string {
	if a.cfg.InMemory {
		return ""
	}
	return a.cfg.DataDir
}
