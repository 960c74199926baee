// Command mayfly-bench measures Mayfly against Redis and a do-nothing
// "null server" on this machine and prints one table (and writes JSON):
// the session workload, durable writes, an expiry storm and resident
// memory, each with client and servers sharing the cores and with the
// server pinned to CPU 0 and the clients to CPU 1.
//
//	go run ./cmd/mayfly-bench          # the sizes
//	go run ./cmd/mayfly-bench -short   # make bench: about 8 minutes on 2 cores
//
// It builds ./cmd/mayfly, starts every server itself on 127.0.0.1, and
// stops them when done. The -role flag is internal: the bench re-executes
// itself as its client processes, as the null server and as the CPU-bound
// neighbours of -neighbour.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mayflydb/mayfly/internal/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mayfly-bench:", err)
		os.Exit(1)
	}
}

// intList is a flag holding comma-separated integers.
type intList []int

func (l *intList) String() string { return fmt.Sprint([]int(*l)) }

func (l *intList) Set(s string) error {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("want comma-separated integers: %w", err)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}

// flagValues are the command line before the sizes are settled: -short
// picks the defaults, and explicit flags override them.
type flagValues struct {
	role, addr           string
	short, keep          bool
	modes, phases, out   string
	mayflyBin, redisBin  string
	baselineBin          string
	baselineRounds       int
	workDir              string
	sessions, clients    int
	warmup, duration     time.Duration
	durableClients       intList
	durableDuration      time.Duration
	stormDocs, memory    int
	failovers            int
	burstDocs            int
	stormShuffled        bool
	burstMeasure         time.Duration
	stormWindow, stormBl time.Duration
	streams              int
	stormStreams         bool
	neighbours           int
	stormCap             float64
	stormStreamsPre      bool
	migrateDocs          int
	migrateExpiring      int
	addShardSessions     int
	migrateWindow        time.Duration
	addShardMax          time.Duration
}

func parse(args []string) (*flagValues, error) {
	v := &flagValues{}
	fs := flag.NewFlagSet("mayfly-bench", flag.ContinueOnError)
	fs.StringVar(&v.role, "role", "", "internal: client, null or spin")
	fs.StringVar(&v.addr, "addr", "", "internal: the null server's address")
	fs.BoolVar(&v.short, "short", false, "short run (make bench): every phase at small sizes, about 8 minutes on 2 cores")
	fs.BoolVar(&v.keep, "keep", false, "keep the temporary directory (server data and logs)")
	fs.StringVar(&v.modes, "modes", strings.Join(bench.AllModes(), ","), "modes to run: shared, pinned")
	fs.StringVar(&v.phases, "phases", strings.Join(bench.AllPhases(), ","), "phases to run: sessions, durable, expiry, memory, replset, sharded, migration, txn")
	fs.StringVar(&v.out, "out", "bench-results/latest.json", "where to write the JSON report")
	fs.StringVar(&v.mayflyBin, "mayfly-bin", "", "prebuilt mayfly server (default: go build ./cmd/mayfly)")
	fs.StringVar(&v.baselineBin, "baseline-bin", "", "a previous build of mayfly to measure beside this one (sessions, expiry, replset)")
	fs.IntVar(&v.baselineRounds, "baseline-rounds", 2, "rounds of each build beside -baseline-bin (sessions run twice as many), alternating this, previous, previous, this")
	fs.StringVar(&v.redisBin, "redis-bin", "/usr/bin/redis-server", "redis-server to compare with")
	fs.StringVar(&v.workDir, "workdir", "", "parent of the temporary directory (default: $TMPDIR)")
	fs.IntVar(&v.sessions, "sessions", 0, "override: preloaded sessions")
	fs.IntVar(&v.clients, "clients", 0, "override: session workload clients")
	fs.DurationVar(&v.warmup, "warmup", 0, "override: unmeasured start of each run")
	fs.DurationVar(&v.duration, "duration", 0, "override: measured time of each sessions run")
	fs.Var(&v.durableClients, "durable-clients", "override: client counts for durable inserts, e.g. 1,16,64")
	fs.DurationVar(&v.durableDuration, "durable-duration", 0, "override: measured time of each durable run")
	fs.IntVar(&v.stormDocs, "storm-docs", 0, "override: documents expiring in the storm")
	fs.DurationVar(&v.stormWindow, "storm-window", 0, "override: window their expiries spread over")
	fs.DurationVar(&v.stormBl, "storm-baseline", 0, "override: sessions measured before the storm")
	fs.BoolVar(&v.stormShuffled, "storm-shuffle", false, "give the storm's documents _ids in random order to their expiry (default: in order)")
	fs.IntVar(&v.burstDocs, "burst-docs", 0, "override: documents expiring at one instant in the burst")
	fs.DurationVar(&v.burstMeasure, "burst-measure", 0, "override: sessions measured from the burst's instant")
	fs.IntVar(&v.memory, "memory-sessions", 0, "override: live sessions for the memory figure")
	fs.IntVar(&v.failovers, "failovers", 0, "override: kill -9 of the replica set's primary")
	fs.BoolVar(&v.stormStreams, "storm-streams", false, "expiry phase: repeat the storm with a change stream of its expiries open, without and with pre-images")
	fs.IntVar(&v.neighbours, "neighbour", 0, "expiry phase: repeat the storm with N CPU-bound neighbour processes running (0: leave it out)")
	fs.Float64Var(&v.stormCap, "storm-cap", 0, "expiry phase: repeat the storm on a server capped at this share of each core it may run on (cgroup; 0: leave it out)")
	fs.BoolVar(&v.stormStreamsPre, "storm-streams-pre", true, "with -storm-streams: also the storm with pre-images (false: only without)")
	fs.IntVar(&v.streams, "streams", 10, "change streams open in the sessions phase's mayfly-streams run (0: leave it out)")
	fs.IntVar(&v.migrateDocs, "migrate-docs", 0, "override: documents in the chunk the migration phase moves once")
	fs.IntVar(&v.migrateExpiring, "migrate-expiring", 0, "override: documents expiring while chunks move")
	fs.DurationVar(&v.migrateWindow, "migrate-window", 0, "override: each sessions window of the migration phase, without and with chunks moving")
	fs.IntVar(&v.addShardSessions, "add-shard-sessions", 0, "override: sessions on the capped shards the migration phase adds a third to")
	fs.DurationVar(&v.addShardMax, "add-shard-max", 0, "override: longest wait for an added shard to serve a third of the operations")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return v, nil
}

// config turns the flags into a bench configuration.
func (v *flagValues) config() (*bench.Config, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	sz := bench.FullSizes()
	if v.short {
		sz = bench.ShortSizes()
	}
	override(&sz.Sessions, v.sessions)
	override(&sz.Clients, v.clients)
	override(&sz.Warmup, v.warmup)
	override(&sz.Duration, v.duration)
	override(&sz.DurableDuration, v.durableDuration)
	override(&sz.StormDocs, v.stormDocs)
	override(&sz.StormWindow, v.stormWindow)
	override(&sz.StormBaseline, v.stormBl)
	sz.StormShuffled = v.stormShuffled
	override(&sz.BurstDocs, v.burstDocs)
	override(&sz.BurstMeasure, v.burstMeasure)
	override(&sz.MemorySessions, v.memory)
	override(&sz.Failovers, v.failovers)
	override(&sz.MigrateDocs, v.migrateDocs)
	override(&sz.MigrateExpiring, v.migrateExpiring)
	override(&sz.MigrateWindow, v.migrateWindow)
	override(&sz.AddShardSessions, v.addShardSessions)
	override(&sz.AddShardMax, v.addShardMax)
	sz.Streams = v.streams
	sz.StormStreams = v.stormStreams
	sz.Neighbours = v.neighbours
	sz.StormCap = v.stormCap
	sz.StormStreamsNoPre = !v.stormStreamsPre
	if len(v.durableClients) > 0 {
		sz.DurableClients = v.durableClients
	}
	return &bench.Config{
		Sizes: sz, Short: v.short,
		Modes: split(v.modes), Phases: split(v.phases), Out: v.out,
		MayflyBin: v.mayflyBin, BaselineBin: v.baselineBin, BaselineRounds: v.baselineRounds, RedisBin: v.redisBin, WorkDir: v.workDir, Keep: v.keep,
		Self: self, Log: os.Stderr,
	}, nil
}

func override[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func run(ctx context.Context, args []string) error {
	v, err := parse(args)
	if err != nil {
		return err
	}
	switch v.role {
	case "client":
		return bench.ClientMain(ctx, os.Stdin, os.Stdout)
	case "null":
		return bench.ServeNull(ctx, v.addr)
	case "spin":
		return bench.Spin(ctx, os.Stdin)
	case "":
	default:
		return fmt.Errorf("unknown -role %q", v.role)
	}
	cfg, err := v.config()
	if err != nil {
		return err
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Print(bench.Table(rep))
	if err := bench.WriteJSON(rep, cfg.Out); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "wrote", cfg.Out)
	return nil
}
