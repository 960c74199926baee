package app

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/params"
	"github.com/mayflydb/mayfly/internal/storage"
)

// DefaultChangeStreamRetention is how long the change log keeps changes
// by default: a stream can resume from a token up to a day old.
const DefaultChangeStreamRetention = 24 * time.Hour

// changeLog is the server's change log: the feed change streams read and
// its retention, trimmed in the background.
type changeLog struct {
	signal *changestream.Signal
	feed   *changestream.Feed
	base   storage.Engine // trims go here, never through the replica set
	// retentionSecs is mayflyChangeStreamRetentionSecs.
	retentionSecs atomic.Int64
}

func newChangeLog(cfg Config) *changeLog {
	cl := &changeLog{signal: changestream.NewSignal()}
	r := cfg.ChangeStreamRetention
	if r <= 0 {
		r = DefaultChangeStreamRetention
	}
	cl.retentionSecs.Store(int64(r / time.Second))
	return cl
}

// standalone wraps eng so that its batches write their events; a replica
// set member writes them at apply instead (repl).
func (cl *changeLog) standalone(eng storage.Engine, cfg Config) (storage.Engine, error) {
	logged, err := changestream.NewEngine(eng, cfg.Clock, cl.signal)
	if err != nil {
		return nil, err
	}
	cl.base = eng
	cl.feed = &changestream.Feed{Reader: logged, Latest: logged.Latest, Signal: cl.signal, Record: logged.Record}
	return logged, nil
}

// member reads the log a replica set member applies into base.
func (a *App) memberChangeLog(base storage.Engine) {
	cl := a.changes
	cl.base = base
	cl.feed = &changestream.Feed{Reader: base, Signal: cl.signal, Latest: func() changestream.Timestamp {
		ts, _, _ := a.rs.OpTime()
		return ts
	}, CatchUp: func(ctx context.Context) { a.rs.CatchUpClusterTime(ctx) }}
}

// warnPeriod is how often the primary (or a standalone server) sends
// the expiry warnings due: the warnings' lateness is at most about this.
const warnPeriod = 50 * time.Millisecond

// runExpiryWarnings sends the "expiring" events of TTL indexes with
// expiryWarningSeconds (docstore/warn.go).
func (a *App) runExpiryWarnings(ctx context.Context) {
	a.every(ctx, warnPeriod, func() {
		// Nothing is written while db.fsyncLock() holds writes.
		if !a.backgroundWrites() || a.ops.fsync.Count() > 0 {
			return
		}
		now := a.cfg.Clock.Now()
		for _, c := range a.store.Collections() {
			if _, err := c.WarnExpiring(now); err != nil {
				a.cfg.Logger.Warn("expiry warnings failed", "ns", c.Namespace(), "err", err)
			}
		}
	})
}

// trimPeriod is how often the change log is cut to its retention.
const trimPeriod = 10 * time.Second

// trim deletes the changes older than the retention.
func (a *App) trimChangeLog() {
	cl := a.changes
	cutoff := a.cfg.Clock.Now().Unix() - cl.retentionSecs.Load()
	if cutoff <= 0 || a.ops.fsync.Count() > 0 {
		return // nothing is written while db.fsyncLock() holds writes
	}
	if _, err := changestream.Trim(cl.base, changestream.Timestamp{T: uint32(cutoff)}); err != nil {
		a.cfg.Logger.Warn("change log trim failed", "err", err)
	}
}

func (a *App) runChangeLogTrim(ctx context.Context) {
	a.every(ctx, trimPeriod, a.trimChangeLog)
}

// registerChangeParams registers mayflyChangeStreamRetentionSecs: how
// long the change log keeps changes; a stream resuming from an older
// point gets 286. A new value trims at once.
func (a *App) registerChangeParams(p *params.Table) {
	cl := a.changes
	p.Register("mayflyChangeStreamRetentionSecs", params.Int(cl.retentionSecs.Load, func(secs int64) {
		cl.retentionSecs.Store(secs)
		a.trimChangeLog()
	}, 1))
}
