package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/mayflydb/mayfly/internal/backup"
	"github.com/mayflydb/mayfly/internal/dirlock"
	"github.com/mayflydb/mayfly/internal/expirywatch"
	"github.com/mayflydb/mayfly/internal/logring"
	"github.com/mayflydb/mayfly/internal/metrics"
	"github.com/mayflydb/mayfly/internal/opstats"
)

// operations are the parts an operator watches and drives the server
// through: command statistics, the recent log for getLog, the fsync lock,
// the expiry watch, the HTTP listener, and the data directory's lock.
type operations struct {
	stats *opstats.Stats
	ring  *logring.Ring
	fsync *backup.Lock
	watch *expirywatch.Watch

	http    *metrics.Server // nil without --http-addr
	dirLock *dirlock.Lock   // nil in memory
	// newDir is true when this start created the data directory, which a
	// failed start then removes again.
	newDir bool
}

// newOperations makes them, and routes cfg's logger through the ring.
func newOperations(cfg *Config) *operations {
	ops := &operations{stats: opstats.New(), ring: logring.New(), fsync: backup.NewLock()}
	cfg.Logger = slog.New(logring.NewHandler(cfg.Logger.Handler(), ops.ring))
	return ops
}

// prepare binds the HTTP listener and locks the data directory before
// anything is written there, so that a start that cannot serve fails
// without leaving a directory behind.
func (o *operations) prepare(cfg Config) error {
	if cfg.HTTPAddr != "" {
		hs, err := metrics.Listen(cfg.HTTPAddr)
		if err != nil {
			return fmt.Errorf("app: --http-addr: %w", err)
		}
		if err := checkHTTPExposure(cfg, hs.Addr()); err != nil {
			_ = hs.Close()
			return err
		}
		o.http = hs
	}
	if cfg.InMemory || cfg.FS != nil {
		return nil
	}
	if _, err := os.Stat(cfg.DataDir); errors.Is(err, os.ErrNotExist) {
		o.newDir = true
	}
	l, err := dirlock.Acquire(cfg.DataDir)
	if err != nil {
		o.abandon(cfg)
		return fmt.Errorf("app: %w", err)
	}
	o.dirLock = l
	return nil
}

// abandon undoes prepare after a failed start.
func (o *operations) abandon(cfg Config) {
	if o.http != nil {
		_ = o.http.Close()
	}
	_ = o.dirLock.Release()
	if o.newDir {
		_ = os.RemoveAll(cfg.DataDir)
	}
}

// serveOperations starts the HTTP listener's service once the server is
// assembled.
func (a *App) serveOperations() {
	if a.ops.http == nil {
		return
	}
	a.ops.http.Serve(metrics.Sources{
		Ops: a.ops.stats, Server: a.srv.Stats, Storage: a.eng.Metrics, Expiry: a.ops.watch,
		TTLPasses: func() int64 { return a.monitor.Stats().Passes },
	}, a.httpAccess(), a.cfg.Logger)
}

// HTTPAddr is the address of the metrics listener, or nil without one.
func (a *App) HTTPAddr() string {
	if a.ops.http == nil {
		return ""
	}
	return a.ops.http.Addr().String()
}

// shutdown stops the HTTP listener and unlocks the data directory, last.
func (o *operations) shutdown(ctx context.Context) error {
	var err error
	if o.http != nil {
		err = o.http.Shutdown(ctx)
	}
	if lerr := o.dirLock.Release(); lerr != nil && err == nil {
		err = lerr
	}
	return err
}

// dataDir is the data directory, or "" in memory.
func (a *App) dataDir() string {
	if a.cfg.InMemory {
		return ""
	}
	return a.cfg.DataDir
}
