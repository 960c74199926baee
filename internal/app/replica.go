package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/repl"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
	"github.com/mayflydb/mayfly/internal/tlsconf"
)

// openReplica reads this server's replica set membership (--replSet);
// raft starts once the server listens (startReplica).
func (a *App) openReplica(eng *pebblestore.Store) error {
	if a.cfg.ReplSet == "" {
		return nil
	}
	rs, err := repl.Open(repl.Config{
		SetName: a.cfg.ReplSet, Self: a.cfg.Addr, Base: eng, Tick: a.cfg.ReplTick,
		RetainEntries: a.cfg.ReplRetainEntries, MaxClockOffset: a.cfg.MaxClockOffset,
		Clock: a.cfg.Clock, Logger: a.cfg.Logger, Changes: a.changes.signal,
		ConfigServer: a.cfg.ClusterRole == RoleConfigServer,
	})
	if err != nil {
		return fmt.Errorf("app: open replica set state: %w", err)
	}
	a.rs = rs
	return nil
}

func (a *App) startReplica() error {
	if a.rs == nil {
		return nil
	}
	a.rs.SetSelf(a.Addr().String())
	a.rs.SetDialer(a.memberDialer())
	if err := a.rs.Start(replicaHooks{a}); err != nil {
		return fmt.Errorf("app: start replica set member: %w", err)
	}
	return nil
}

// primaryOrStandalone reports whether this server's TTL monitor deletes.
func (a *App) primaryOrStandalone() bool { return a.rs == nil || a.rs.Writable() }

// replicaHooks keep the docstore's in-memory state in step with what the
// member applies, and start expiry on a new primary.
type replicaHooks struct{ a *App }

func (h replicaHooks) Applied(deltas []repl.CountDelta, catalogChanged bool) {
	var counted map[uint64]bool // collections whose count includes this batch
	if catalogChanged {
		var err error
		if counted, err = h.a.store.ReloadCatalog(); err != nil {
			h.a.cfg.Logger.Error("reloading the catalog after a replicated change failed", "err", err)
		}
		defer h.reloadUsers()
	}
	for _, d := range deltas {
		if !counted[d.CollID] {
			h.a.store.ApplyCounts(d.CollID, d.Docs, d.Bytes)
		}
		if !catalogChanged && h.isAccessControl(d.CollID) {
			h.reloadUsers()
		}
	}
}

// isAccessControl reports whether collID is admin.system.users or
// admin.system.roles, whose changes the member's access control caches.
func (h replicaHooks) isAccessControl(collID uint64) bool {
	for _, name := range []string{"system.users", "system.roles"} {
		if c := h.a.store.Collection("admin", name); c != nil && c.Meta().ID == collID {
			return true
		}
	}
	return false
}

func (h replicaHooks) Reloaded() { h.reload() }

// BeginApply and EndApply tell the store of an apply's span, in which its
// counts lag storage (docstore/applies.go).
func (h replicaHooks) BeginApply() { h.a.store.BeginApply() }
func (h replicaHooks) EndApply()   { h.a.store.EndApply() }

// ApplyExpiries deletes, on every member, what the primary's monitor
// expired (docs/design/0007, compact expiries).
func (h replicaHooks) ApplyExpiries(b storage.Batch, keys [][]byte) ([][]byte, func(), error) {
	return h.a.store.ApplyExpiries(b, keys)
}

func (h replicaHooks) reload() {
	if err := h.a.store.Reload(); err != nil {
		h.a.cfg.Logger.Error("reloading the catalog after a replicated change failed", "err", err)
	}
	h.reloadUsers()
}

func (h replicaHooks) reloadUsers() {
	if err := h.a.auth.Reload(); err != nil {
		h.a.cfg.Logger.Error("reloading users and roles after a replicated change failed", "err", err)
	}
}

// Promoted runs on the member's apply goroutine, which the writes below
// wait on, so they run on their own. A shard's placements are forgotten
// first, before the monitor is woken (shardstate's PrimacyChanged).
func (h replicaHooks) Promoted() {
	h.primacyChanged()
	go func() {
		if err := h.a.store.DropUnfinishedBuilds(); err != nil {
			h.a.cfg.Logger.Warn("dropping unfinished index builds on promotion failed", "err", err)
		}
		h.a.monitor.Kick()
	}()
}

// Demoted aborts the open transactions, as a stepping-down mongod does:
// their next statement or commit answers NoSuchTransaction. It runs on
// its own goroutine, so a promotion may have come first: that one has
// forgotten the placements already, and its own critical sections stay.
func (h replicaHooks) Demoted() {
	if !h.a.rs.Writable() {
		h.primacyChanged()
	}
	h.a.txns.AbortAll()
}

// primacyChanged tells a shard's migrations that the member stepped up
// or down.
func (h replicaHooks) primacyChanged() {
	if m := h.a.migrations.shard; m != nil {
		m.PrimacyChanged()
	}
}

// sweepSessions removes, on the primary, the retryable-write records of
// sessions idle for longer than a driver may retry.
func (a *App) sweepSessions(ctx context.Context) {
	a.every(ctx, time.Minute, func() {
		if !a.rs.Writable() {
			return
		}
		if n, err := session.Sweep(a.store.Engine(), a.cfg.Clock.Now()); err != nil {
			a.cfg.Logger.Warn("removing idle sessions' records failed", "err", err)
		} else if n > 0 {
			a.cfg.Logger.Debug("removed idle sessions' records", "sessions", n)
		}
	})
}

// memberDialer connects this member to the others as mongod does: over
// TLS when the server prefers or requires it, and logged in as the
// keyFile's __system user when there is a keyFile.
func (a *App) memberDialer() repl.Dialer {
	kf := a.auth.KeyFile()
	useTLS := a.cfg.Security.TLSMode == server.TLSPrefer || a.cfg.Security.TLSMode == server.TLSRequire
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var tlsCfg *tls.Config
		if useTLS {
			host, _, _ := net.SplitHostPort(addr)
			cfg, err := tlsconf.Client(a.cfg.Security.TLS, host)
			if err != nil {
				return nil, err
			}
			tlsCfg = cfg
		}
		if kf == nil {
			return dialPlain(ctx, addr, tlsCfg)
		}
		nc, _, err := auth.Dial(ctx, addr, tlsCfg, kf.Credential())
		return nc, err
	}
}

func dialPlain(ctx context.Context, addr string, tlsCfg *tls.Config) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil || tlsCfg == nil {
		return nc, err
	}
	tc := tls.Client(nc, tlsCfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return tc, nil
}

// replicatedFloor keeps a replica set primary's TTL passes at least 50 ms
// apart, whatever their load (a standalone's follow it, 15 to 50 ms apart):
// each pass proposes at least one batch that every member applies, and the
// shorter floor was measured on a standalone only (docs/design/0003, "The
// monitor").
func replicatedFloor(cfg Config) time.Duration {
	if cfg.ReplSet == "" {
		return 0
	}
	return 50 * time.Millisecond
}

// replicatedBatchDocs starts a primary's TTL batches at 4,000 documents,
// where a standalone's start at 1,000: every member applies each batch
// with a fresh iterator, whose construction fragments all the range
// deletions the memtable holds, so the cost of a storm's applies grows
// with the square of how many come between two flushes (docs/design/0007,
// "Expiry").
func replicatedBatchDocs(cfg Config) int {
	if cfg.ReplSet == "" {
		return 0 // the monitor's default
	}
	return 4000
}

// replicatedGrowBatches lets a primary's TTL batches grow to 4 times their
// size while they wait for their commit: a batch's deletions then share
// one raft round trip (docs/design/0007, "Expiry"). The largest batch,
// 16,000 documents, is what it was with batches of 1,000 growing 16 times.
func replicatedGrowBatches(cfg Config) int {
	if cfg.ReplSet == "" {
		return 1
	}
	return 4
}
