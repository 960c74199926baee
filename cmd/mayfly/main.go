// Command mayfly runs the Mayfly server: a document database that speaks
// the MongoDB wire protocol, built for data that must expire.
//
// Every flag has a MAYFLY_* environment variable; the flag wins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

func main() {
	if err := dispatch(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mayfly:", err)
		os.Exit(1)
	}
}

// setParams collects repeated --setParameter name=value flags.
type setParams map[string]string

func (s setParams) String() string { return fmt.Sprint(map[string]string(s)) }

func (s setParams) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok {
		return errors.New("want name=value")
	}
	s[name] = value
	return nil
}

type options struct {
	cfg       app.Config
	tlsMode   string
	storage   string
	cacheMB   int64
	logLevel  string
	logFormat string
	// cpuProfile, when set, is where the server writes a CPU profile of
	// its whole run on shutdown.
	cpuProfile string

	args   []string  // the command line, for --help
	logOut io.Writer // standard error unless systemLog.path says otherwise
}

// defaultWriteBehind is how often a standalone server writes the
// documents it holds touched: as often as WiredTiger checkpoints, its
// journal (here the touches' TTL entries) covering the time between.
const defaultWriteBehind = 60 * time.Second

func parseFlags(args []string) (*options, error) {
	o := &options{cfg: app.Config{SetParameters: setParams{}}, args: args, logOut: os.Stderr}
	fs := flag.NewFlagSet("mayfly", flag.ContinueOnError)
	fs.StringVar(&o.cfg.Addr, "addr", env("MAYFLY_ADDR", "127.0.0.1:27017"), "listen address (MAYFLY_ADDR)")
	fs.StringVar(&o.cfg.DataDir, "dbpath", env("MAYFLY_DBPATH", "mayfly-data"), "data directory (MAYFLY_DBPATH)")
	fs.StringVar(&o.storage, "storage", env("MAYFLY_STORAGE", "disk"), "storage: disk or memory (MAYFLY_STORAGE)")
	fs.Int64Var(&o.cacheMB, "cacheSizeMB", int64(envInt("MAYFLY_CACHE_SIZE_MB", rescache.DefaultBytes>>20)), "resident cache in front of storage, MiB; 0 none (MAYFLY_CACHE_SIZE_MB; mongod.conf storage.wiredTiger.engineConfig.cacheSizeGB)")
	fs.DurationVar(&o.cfg.WriteBehind, "write-behind", envDuration("MAYFLY_WRITE_BEHIND", defaultWriteBehind), "a standalone server writes touched documents this often, their touches logged by their TTL entries or as patches meanwhile; 0 at once (MAYFLY_WRITE_BEHIND)")
	fs.StringVar(&o.logLevel, "log-level", env("MAYFLY_LOG_LEVEL", "info"), "debug, info, warn or error (MAYFLY_LOG_LEVEL)")
	fs.StringVar(&o.logFormat, "log-format", env("MAYFLY_LOG_FORMAT", "text"), "text or json (MAYFLY_LOG_FORMAT)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", env("MAYFLY_CPUPROFILE", ""), "debugging: write a CPU profile of the run to this file on shutdown (MAYFLY_CPUPROFILE)")
	fs.IntVar(&o.cfg.MaxConns, "max-conns", envInt("MAYFLY_MAX_CONNS", 1000000), "maximum connections (MAYFLY_MAX_CONNS)")
	fs.DurationVar(&o.cfg.IdleTimeout, "idle-timeout", envDuration("MAYFLY_IDLE_TIMEOUT", 0), "close connections idle this long; 0 never (MAYFLY_IDLE_TIMEOUT)")
	fs.DurationVar(&o.cfg.MessageTimeout, "message-timeout", envDuration("MAYFLY_MESSAGE_TIMEOUT", 60*time.Second), "longest time a request may take to arrive once started (MAYFLY_MESSAGE_TIMEOUT)")
	fs.Int64Var(&o.cfg.TTLSleepSecs, "ttl-monitor-sleep-secs", int64(envInt("MAYFLY_TTL_MONITOR_SLEEP_SECS", 60)), "longest pause of the TTL monitor (MAYFLY_TTL_MONITOR_SLEEP_SECS)")
	fs.Var(setParams(o.cfg.SetParameters), "setParameter", "server parameter name=value, repeatable")
	fs.StringVar(&o.cfg.ReplSet, "replSet", env("MAYFLY_REPLSET", ""), "replica set name: run as a member of that set (MAYFLY_REPLSET)")
	fs.Uint64Var(&o.cfg.ReplRetainEntries, "repl-retain-entries", uint64(envInt("MAYFLY_REPL_RETAIN_ENTRIES", 20000)), "applied entries the replica set log keeps; members further behind get a snapshot (MAYFLY_REPL_RETAIN_ENTRIES)")
	fs.DurationVar(&o.cfg.ChangeStreamRetention, "change-stream-retention", envDuration("MAYFLY_CHANGE_STREAM_RETENTION", app.DefaultChangeStreamRetention), "how long the change log keeps changes for change streams to resume from (MAYFLY_CHANGE_STREAM_RETENTION)")
	fs.DurationVar(&o.cfg.MaxClockOffset, "max-clock-offset", envDuration("MAYFLY_MAX_CLOCK_OFFSET", 250*time.Millisecond), "a secondary whose clock is further from the primary's serves no reads (MAYFLY_MAX_CLOCK_OFFSET)")
	fs.DurationVar(&o.cfg.ClockSkew, "test-clock-skew", 0, "for tests only: shift this server's clock")
	// Deployment: mongod's --port, --bind_ip and --config, --version, --http-addr.
	ops := addOperationsFlags(fs, o)
	securityFlags(fs, o)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := ops.apply(fs, o); err != nil {
		return nil, err
	}
	if err := o.securitySettings(); err != nil {
		return nil, err
	}
	if err := o.setCacheSize(); err != nil {
		return nil, err
	}
	switch o.storage {
	case "disk":
	case "memory":
		o.cfg.InMemory = true
	default:
		return nil, fmt.Errorf("--storage must be disk or memory, not %q", o.storage)
	}
	return o, nil
}

// setCacheSize turns --cacheSizeMB into the app's resident cache bound.
func (o *options) setCacheSize() error {
	switch {
	case o.cacheMB < 0:
		return fmt.Errorf("--cacheSizeMB must not be negative, not %d", o.cacheMB)
	case o.cacheMB == 0:
		o.cfg.ResidentCacheBytes = -1
	default:
		o.cfg.ResidentCacheBytes = o.cacheMB << 20
	}
	return nil
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	var n int
	if v, ok := os.LookupEnv(name); ok {
		if _, err := fmt.Sscan(v, &n); err == nil {
			return n
		}
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, ok := os.LookupEnv(name); ok {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

func newLogger(level, format string, out io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(out, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(out, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

// threadsPerCore is how many goroutines may run at once per core while
// the TTL monitor deletes a backlog with clients busy (ttl.Config.Threads),
// and in a replica set member throughout (schedulerThreads).
//
// Otherwise one per core, Go's default, serves requests best: with two,
// the kernel time-slices the scheduler's threads on each core, and a
// request whose thread it sets aside waits out the other's slice (on one
// core the sessions' p99 was 1.4 times as long). Flushes and compactions
// yield at each write instead (pebblestore's yieldFS). But a monitor
// deleting a backlog holds its thread for milliseconds a batch, which
// with one per core held requests until Go preempted it, and a storm's
// lateness on one core doubled. Measured in docs/design/0003 ("Pacing").
const threadsPerCore = 2

// schedulerThreads sets GOMAXPROCS for the TTL monitor's backlogs, unless
// the GOMAXPROCS variable chose it. A replica set member runs
// threadsPerCore per core throughout: its raft and apply loops hand each
// write from goroutine to goroutine, and with one thread per core each
// hand-off waited for a request to give its thread up (three members and
// their clients on two cores: w:"majority" inserts 0.87 of the rate).
type schedulerThreads struct {
	cores int
	fixed bool // the variable chose it, or a member runs threadsPerCore
}

func newSchedulerThreads(member bool) schedulerThreads {
	_, chosen := os.LookupEnv("GOMAXPROCS")
	s := schedulerThreads{cores: runtime.GOMAXPROCS(0), fixed: chosen || member}
	if member && !chosen {
		runtime.GOMAXPROCS(threadsPerCore * s.cores)
	}
	return s
}

// set gives threadsPerCore per core (more) or Go's default.
func (s schedulerThreads) set(more bool) {
	switch {
	case s.fixed:
	case more:
		runtime.GOMAXPROCS(threadsPerCore * s.cores)
	default:
		runtime.SetDefaultGOMAXPROCS()
	}
}

func run(args []string) error {
	o, err := parseFlags(args)
	if errors.Is(err, errDone) || errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	logger, err := newLogger(o.logLevel, o.logFormat, o.logOut)
	if err != nil {
		return err
	}
	o.cfg.Logger = logger
	o.cfg.Argv = append([]string{"mayfly"}, args...)
	threads := newSchedulerThreads(o.cfg.ReplSet != "")
	o.cfg.CPUs, o.cfg.BacklogThreads = threads.cores, threads.set
	o.cfg.NewConfigClient = newConfigClient
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	a, err := app.Start(o.cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	logger.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped cleanly")
	return nil
}
