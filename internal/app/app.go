// Package app assembles a Mayfly server from its parts: storage engine,
// docstore, cursor registry, TTL monitor, command handler and network
// server. cmd/mayfly and the integration tests both start servers here.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/activity"
	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/bgyield"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/commands"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/expirywatch"
	"github.com/mayflydb/mayfly/internal/repl"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/snaphistory"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
	"github.com/mayflydb/mayfly/internal/ttl"
)

// Config is the whole server configuration. The zero value serves on
// 127.0.0.1:27017 with data in ./mayfly-data.
type Config struct {
	Addr     string // default "127.0.0.1:27017"
	DataDir  string // default "./mayfly-data"
	InMemory bool   // --storage memory
	MaxConns int
	// MessageTimeout bounds how long a request may take to arrive once it
	// has started (default server.DefaultMessageTimeout).
	MessageTimeout time.Duration
	// IdleTimeout closes connections that send nothing for this long
	// (default 0: never).
	IdleTimeout time.Duration
	// TTLSleepSecs is the initial ttlMonitorSleepSecs (default 60).
	TTLSleepSecs int64
	// TTLDisabled starts with ttlMonitorEnabled false.
	TTLDisabled bool
	// LaggingExpiry turns off exact expiry (MongoDB's behaviour).
	LaggingExpiry bool
	// CursorIdle is the idle cursor timeout (default 10 minutes).
	CursorIdle time.Duration
	// SetParameters are name → value pairs applied at start, as mongod's
	// --setParameter.
	SetParameters map[string]string
	// FS replaces the filesystem under DataDir, for fault-injection tests.
	FS vfs.FS
	// ResidentCacheBytes bounds the resident cache in front of the storage
	// engine (--cacheSizeMB); 0 means rescache.DefaultBytes, negative
	// none.
	ResidentCacheBytes int64
	// WriteBehind, positive, holds a standalone server's touches (writes
	// changing a few bytes of a cached document) in the resident cache,
	// logged by their TTL entries or as patches, and writes the documents
	// this often (pebblestore's behind.go and touchlog.go); 0 writes every
	// document at once. cmd/mayfly defaults it to a minute.
	WriteBehind time.Duration
	// RecoverInterval is how often storage that failed (disk full, I/O
	// error) checks whether it can take writes again (default 1s; negative
	// turns automatic recovery off).
	RecoverInterval time.Duration
	// CPUs is the number of cores the server runs on, on which the TTL
	// monitor's pace and the storage engine's compaction concurrency are
	// reckoned; default GOMAXPROCS.
	CPUs int
	// BacklogThreads adds scheduler threads (more) while the TTL monitor
	// deletes a backlog with clients busy, and takes them back
	// (ttl.Config.Threads); cmd/mayfly sets GOMAXPROCS. Default: none.
	BacklogThreads func(more bool)
	// ReplSet is --replSet: the name of the replica set this server is a
	// member of (empty: a standalone server).
	ReplSet string
	// ReplTick is the replica set's raft tick (default 100ms; an election
	// starts 6–12 ticks after the primary goes silent).
	ReplTick time.Duration
	// ReplRetainEntries is how many applied entries the replica set's log
	// keeps (default 20000); a member further behind gets a snapshot.
	ReplRetainEntries uint64
	// MaxClockOffset is how far a secondary's clock may be from the
	// primary's before it stops serving reads (default 250ms).
	MaxClockOffset time.Duration
	// ChangeStreamRetention is how long the change log keeps changes
	// (default DefaultChangeStreamRetention); a stream resuming from
	// further back gets ChangeStreamHistoryLost.
	ChangeStreamRetention time.Duration
	// ClockSkew shifts this server's clock, for tests of clocks that
	// disagree (--test-clock-skew).
	ClockSkew time.Duration
	Clock     clock.Clock
	Logger    *slog.Logger
	Argv      []string

	// HTTPAddr, when set, serves Prometheus metrics at /metrics and the
	// expiry dashboard at / (--http-addr). With access control on it asks
	// for a user who holds clusterMonitor; without, it serves anyone, so
	// it refuses an address beyond loopback unless HTTPAllowRemote.
	HTTPAddr string
	// HTTPAllowRemote lets the endpoint listen beyond loopback with access
	// control off (--http-allow-remote).
	HTTPAllowRemote bool

	// Security is access control and TLS (--auth, --keyFile, --tls*).
	Security Security

	// ClusterRole is RoleConfigServer or RoleShardServer (--configsvr,
	// --shardsvr); empty for a server outside a sharded cluster.
	ClusterRole string
	// NewConfigClient makes a shard member's client of its config
	// servers, logged in as cred, over TLS when tlsCfg is set; a shard
	// member needs it.
	NewConfigClient func(cred auth.Credential, tlsCfg *tls.Config) ConfigClient
}

// App is a running server.
type App struct {
	cfg      Config
	eng      *pebblestore.Store
	resident *rescache.Cache // nil: none
	yielder  *bgyield.Yielder
	store    *docstore.Store
	cursors  *cursor.Registry
	monitor  *ttl.Monitor
	srv      *server.Server
	rs       *repl.Replica
	auth     *auth.Manager
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	serveErr chan error
	ops      *operations
	changes  *changeLog
	// txns is the sessions' transactions, aborted past their lifetime.
	txns *session.Transactions
	// snapshots holds snapshot reads' snapshots for their window.
	snapshots *snaphistory.History
	raft      raftStart // when this member's raft starts (diskfull.go)
	// configClient reaches the config servers from a shard (sharding.go).
	configClient ConfigClient
	// migrations is a shard's or config server's migration work
	// (migrations.go).
	migrations migrationWork
}

// Start opens storage and starts listening; it returns once the server
// accepts connections.
func Start(cfg Config) (*App, error) {
	cfg = withDefaults(cfg)
	if err := checkClusterRole(cfg); err != nil {
		return nil, err
	}
	ops := newOperations(&cfg)
	if err := ops.prepare(cfg); err != nil {
		return nil, err
	}
	resident := newResidentCache(cfg)
	// The scheduler's time, not the data's: a test clock must not hold
	// background work.
	yielder := bgyield.New(clock.Real{}, runtime.Gosched)
	eng, err := pebblestore.Open(pebblestore.Options{
		Dir: cfg.DataDir, InMemory: cfg.InMemory, FS: cfg.FS, RecoverInterval: cfg.RecoverInterval, Logger: cfg.Logger,
		CPUs: cfg.CPUs, Resident: resident, Yield: yielder.Yield, Replicated: cfg.ReplSet != "",
		WriteBehind: cfg.WriteBehind,
	})
	if err != nil {
		ops.abandon(cfg)
		return nil, fmt.Errorf("app: open storage: %w", err)
	}
	a := &App{cfg: cfg, eng: eng, resident: resident, yielder: yielder, serveErr: make(chan error, 1), ops: ops, changes: newChangeLog(cfg), txns: session.NewTransactions(cfg.Clock)}
	if err := a.openReplica(eng); err != nil {
		_ = eng.Close()
		ops.abandon(cfg)
		return nil, err
	}
	if err := a.assemble(); err != nil {
		_ = eng.Close()
		ops.abandon(cfg)
		return nil, err
	}
	if err := a.srv.Listen(); err != nil {
		a.stopBackground()
		_ = eng.Close()
		ops.abandon(cfg)
		return nil, fmt.Errorf("app: %w", err)
	}
	go func() { a.serveErr <- a.srv.Serve() }()
	if err := a.startReplicaWhenWritable(); err != nil {
		_ = a.Shutdown(context.Background())
		return nil, err
	}
	a.serveOperations()
	warnIfOpen(cfg.Logger, a.Addr(), cfg.Security)
	cfg.Logger.Info("mayfly listening", "addr", a.Addr().String(), "storage", storageName(cfg), "dir", cfg.DataDir)
	a.ops.ring.Started()
	return a, nil
}

// newResidentCache is the cache cfg asks for, or nil.
func newResidentCache(cfg Config) *rescache.Cache {
	size := cfg.ResidentCacheBytes
	if size == 0 {
		size = rescache.DefaultBytes
	}
	if size < 0 {
		return nil
	}
	return rescache.New(size, cfg.Clock)
}

func withDefaults(cfg Config) Config {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:27017"
	}
	if cfg.DataDir == "" {
		cfg.DataDir = "mayfly-data"
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.ClockSkew != 0 {
		cfg.Clock = clock.Skewed{Base: cfg.Clock, Offset: cfg.ClockSkew}
	}
	if testCommands(cfg.SetParameters) {
		cfg.Clock = &clock.Offset{Base: cfg.Clock}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg
}

func storageName(cfg Config) string {
	if cfg.InMemory {
		return "memory"
	}
	return "disk"
}

func (a *App) assemble() error {
	cfg := a.cfg
	var eng storage.Engine
	if a.rs != nil {
		eng = a.rs.Engine()
		a.memberChangeLog(a.eng)
	} else {
		logged, err := a.changes.standalone(a.eng, cfg)
		if err != nil {
			return err
		}
		eng = logged
	}
	store, err := docstore.Open(eng, docstore.Options{Clock: cfg.Clock, Logger: cfg.Logger, Replicated: a.rs != nil, Resident: a.resident})
	if err != nil {
		return err
	}
	store.SetExactExpiry(!cfg.LaggingExpiry)
	a.store = store
	a.snapshots = snaphistory.New(store, clock.Unoffset(cfg.Clock))
	a.cursors = cursor.NewRegistry(clock.Unoffset(cfg.Clock), cfg.CursorIdle)
	ops := activity.NewRegistry(cfg.Clock)
	a.ops.watch = expirywatch.New(store, cfg.Clock, cfg.Logger)
	profiles := activity.NewProfiler()
	observer := &ttlObserver{ops: ops, profiles: profiles, store: store, logger: cfg.Logger, clock: cfg.Clock, fsync: a.ops.fsync, watch: a.ops.watch}
	a.monitor = ttl.New(store, cfg.Clock, ttl.Config{
		SleepSecs: cfg.TTLSleepSecs, Disabled: cfg.TTLDisabled, Logger: cfg.Logger, Observer: observer,
		Busy: func() bool { return ops.BusyWithin(100 * time.Millisecond) },
		CPUs: cfg.CPUs, Active: a.backgroundWrites, BatchDocs: replicatedBatchDocs(cfg), GrowBatches: replicatedGrowBatches(cfg), Floor: replicatedFloor(cfg),
		Threads: cfg.BacklogThreads,
	})
	authMgr, tlsCfg, err := a.security(store)
	if err != nil {
		return err
	}
	params := a.params()
	a.registerChangeParams(params)
	if err := applySetParameters(params, cfg.SetParameters); err != nil {
		return err
	}
	shard, err := a.newShardState()
	if err != nil {
		return err
	}
	if err := a.newMigrationWork(shard); err != nil {
		return err
	}
	h := commands.New(commands.Deps{
		Store: store, Cursors: a.cursors, Clock: cfg.Clock, Logger: cfg.Logger, Params: params,
		Argv: cfg.Argv, Parsed: a.withClusterRole(a.withSecurity(a.parsedConfig())), Activity: ops, Auth: authMgr,
		TTLStats: func() commands.TTLStats { return commands.TTLStats(a.monitor.Stats()) },
		OpStats:  a.ops.stats, Log: a.ops.ring, DataDir: a.dataDir(), Fsync: a.ops.fsync,
		Repl: a.rs, ReplicaSetMember: a.rs != nil, TestCommands: testCommands(cfg.SetParameters),
		Changes: a.changes.feed, Profiler: profiles, ClusterRole: cfg.ClusterRole, Shard: shard,
		Transactions: a.txns, Migrations: a.migrations.shard, DocumentMoves: a.migrations.moves, ConfigServer: a.migrations.config,
		FailPoints: a.migrations.failPoints, Snapshots: a.snapshots,
	})
	a.srv = server.New(server.Config{Addr: cfg.Addr, MaxConns: cfg.MaxConns, MessageTimeout: cfg.MessageTimeout, Logger: cfg.Logger,
		TLS: tlsCfg, TLSMode: cfg.Security.TLSMode, IdleTimeout: cfg.IdleTimeout}, h)
	h.SetServerStats(a.srv.Stats)
	a.yielder.Watch(a.srv.BytesIn)
	a.resumeAfterReopen()
	a.startBackground()
	return nil
}

func (a *App) parsedConfig() bson.D {
	return bson.D{
		{Key: "net", Value: bson.D{{Key: "bindIp", Value: a.cfg.Addr}}},
		{Key: "storage", Value: bson.D{{Key: "dbPath", Value: a.cfg.DataDir}, {Key: "engine", Value: storageName(a.cfg)}}},
	}
}

func (a *App) startBackground() {
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.wg.Add(4)
	go func() { defer a.wg.Done(); a.monitor.Run(ctx) }()
	go func() { defer a.wg.Done(); a.reapCursors(ctx) }()
	go func() { defer a.wg.Done(); a.runChangeLogTrim(ctx) }()
	go func() { defer a.wg.Done(); a.runExpiryWarnings(ctx) }()
	if a.rs != nil {
		a.wg.Add(3)
		go func() { defer a.wg.Done(); a.sweepSessions(ctx) }()
		go func() { defer a.wg.Done(); a.txns.Run(ctx) }()
		go func() { defer a.wg.Done(); a.runMigrationWork(ctx) }()
	}
}

func (a *App) stopBackground() {
	if a.cancel != nil {
		a.cancel()
	}
	a.wg.Wait()
}

func (a *App) reapCursors(ctx context.Context) {
	a.every(ctx, time.Minute, func() { a.cursors.ReapIdle() })
}

// every runs f each period until ctx ends.
func (a *App) every(ctx context.Context, period time.Duration, f func()) {
	t := a.cfg.Clock.NewTimer(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			f()
			t.Reset(period)
		}
	}
}

// Addr is the address the server listens on.
func (a *App) Addr() net.Addr { return a.srv.Addr() }

// Store exposes the docstore (for tests and tools).
func (a *App) Store() *docstore.Store { return a.store }

// Monitor exposes the TTL monitor (for tests).
func (a *App) Monitor() *ttl.Monitor { return a.monitor }

// Shutdown stops accepting connections, lets in-flight commands finish
// (until ctx ends), stops background work, syncs and closes storage.
func (a *App) Shutdown(ctx context.Context) error {
	a.ops.fsync.Release()
	err := a.srv.Shutdown(ctx)
	a.closeReplica()
	a.closeConfigClient()
	a.stopBackground()
	a.cursors.CloseAll()
	if a.snapshots != nil {
		a.snapshots.Close()
	}
	if serr := <-a.serveErr; serr != nil && !errors.Is(serr, server.ErrServerClosed) && err == nil {
		err = serr
	}
	if cerr := a.eng.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if oerr := a.ops.shutdown(ctx); oerr != nil && err == nil {
		err = oerr
	}
	return err
}
