package bench

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Sizes are the counts and durations of a run.
type Sizes struct {
	Sessions        int           `json:"sessions"`         // preloaded sessions
	Clients         int           `json:"clients"`          // session workload clients
	Warmup          time.Duration `json:"warmup"`           // unmeasured start of each run
	Duration        time.Duration `json:"duration"`         // measured part of a sessions run
	DurableClients  []int         `json:"durable_clients"`  // client counts for durable inserts
	DurableDuration time.Duration `json:"durable_duration"` // measured part of each of those
	FsyncDuration   time.Duration `json:"fsync_duration"`   // raw fsync loop
	StormDocs       int           `json:"storm_docs"`       // documents that expire in the storm
	StormWindow     time.Duration `json:"storm_window"`     // over which their expiries spread
	StormBaseline   time.Duration `json:"storm_baseline"`   // sessions measured before the storm
	StormPoll       time.Duration `json:"storm_poll"`       // deletion counter sampling period
	StormMaxDrain   time.Duration `json:"storm_max_drain"`  // longest wait for deletion after the storm
	StormShuffled   bool          `json:"storm_shuffled"`   // storm _ids in random order to expiry
	BurstDocs       int           `json:"burst_docs"`       // documents that expire at one instant
	BurstMeasure    time.Duration `json:"burst_measure"`    // sessions measured this long from it
	MemorySessions  int           `json:"memory_sessions"`  // live sessions for the memory figure
	MemorySettle    time.Duration `json:"memory_settle"`    // wait after loading before reading RSS
	Failovers       int           `json:"failovers"`        // kill -9 of a replica set's primary
	// Streams change streams are open on the sessions collection in the
	// sessions phase's mayfly-streams run, measured beside Mayfly without
	// any; 0 leaves that run out.
	Streams int `json:"streams"`
	// StormStreams repeats the storm (expiry phase) on fresh servers with
	// a change stream of its expiries open, without and with pre-images.
	StormStreams bool `json:"storm_streams"`
	// Neighbours repeats the storm (expiry phase) on a fresh server with
	// that many CPU-bound neighbour processes running (see Spin), so that
	// its lateness shows beside the storm's without them; 0 leaves it out.
	Neighbours int `json:"neighbours"`
	// StormCap repeats the storm (expiry phase) on a fresh server capped
	// at that share of each core it may run on (one pinned, every core
	// shared), so that its lateness shows on cores slower or busier than
	// this machine's; 0 leaves it out.
	StormCap float64 `json:"storm_cap,omitempty"`
	// StormStreamsNoPre leaves out the stream storm with pre-images.
	StormStreamsNoPre bool `json:"storm_streams_no_pre,omitempty"`
	// The migration phase: MigrateDocs documents in the chunk one move
	// carries; MigrateWindow long windows of the session workload without
	// and with chunks moving, MigrateExpiring documents expiring over the
	// second; AddShardSessions sessions on the capped shards a third is
	// added to, and AddShardMax the longest wait for it to take its third
	// of the operations.
	MigrateDocs      int           `json:"migrate_docs"`
	MigrateWindow    time.Duration `json:"migrate_window"`
	MigrateExpiring  int           `json:"migrate_expiring"`
	AddShardSessions int           `json:"add_shard_sessions"`
	AddShardMax      time.Duration `json:"add_shard_max"`
}

// FullSizes are the sizes.
func FullSizes() Sizes {
	return Sizes{
		Sessions: 100_000, Clients: 64, Warmup: 2 * time.Second, Duration: 10 * time.Second,
		DurableClients: []int{1, 16, 64}, DurableDuration: 5 * time.Second, FsyncDuration: 3 * time.Second,
		StormDocs: 1_000_000, StormWindow: 10 * time.Second, StormBaseline: 5 * time.Second,
		StormPoll: 10 * time.Millisecond, StormMaxDrain: 30 * time.Second,
		BurstDocs: 1_000_000, BurstMeasure: 5 * time.Second,
		MemorySessions: 1_000_000, MemorySettle: 5 * time.Second,
		Failovers: 10, Streams: 10,
		MigrateDocs: 100_000, MigrateWindow: 20 * time.Second, MigrateExpiring: 100_000,
		AddShardSessions: 100_000, AddShardMax: 4 * time.Minute,
	}
}

// ShortSizes fit `make bench` in three minutes. The storm keeps the full
// run's rate (100 000 expiries a second) over a shorter window; the burst
// is measured for as long as 100 000 deletions a second would take for
// half of it, as in the full run. A move carries a few hundred documents
// a second here (docs/design/0005, "Chunk migrations"), so the short
// run's moved chunk and added shard's sessions are small.
func ShortSizes() Sizes {
	return Sizes{
		Sessions: 100_000, Clients: 64, Warmup: time.Second, Duration: 3 * time.Second,
		DurableClients: []int{1, 16, 64}, DurableDuration: 2 * time.Second, FsyncDuration: time.Second,
		StormDocs: 200_000, StormWindow: 2 * time.Second, StormBaseline: 2 * time.Second,
		StormPoll: 10 * time.Millisecond, StormMaxDrain: 5 * time.Second,
		BurstDocs: 200_000, BurstMeasure: time.Second,
		MemorySessions: 200_000, MemorySettle: 2 * time.Second,
		Failovers: 3, Streams: 10,
		MigrateDocs: 10_000, MigrateWindow: 8 * time.Second, MigrateExpiring: 20_000,
		AddShardSessions: 30_000, AddShardMax: time.Minute,
	}
}

// The modes: client and servers share both cores, or the server runs on
// CPU 0 and the clients on CPU 1.
const (
	ModeShared = "shared"
	ModePinned = "pinned"
)

// The phases, in the order they run.
const (
	PhaseSessions = "sessions"
	PhaseDurable  = "durable"
	PhaseExpiry   = "expiry"
	PhaseMemory   = "memory"
	PhaseReplSet  = "replset"
	PhaseSharded  = "sharded"
	PhaseTxn      = "txn"
	// PhaseMigration is chunk migrations (migration.go).
	PhaseMigration = "migration"
)

// AllModes and AllPhases list every mode and phase.
func AllModes() []string { return []string{ModeShared, ModePinned} }
func AllPhases() []string {
	return []string{PhaseSessions, PhaseDurable, PhaseExpiry, PhaseMemory, PhaseReplSet, PhaseSharded, PhaseMigration, PhaseTxn}
}

// Config is a whole bench run.
type Config struct {
	Sizes
	Short     bool
	Modes     []string
	Phases    []string
	Out       string // JSON report path
	MayflyBin string // prebuilt server; empty builds ./cmd/mayfly
	// BaselineBin is a previous build of mayfly, measured beside this one
	// in the sessions, expiry and replset phases, so a change shows as a ratio
	// taken in one run (e.g. that standalone does not regress).
	BaselineBin string
	// BaselineRounds is how many rounds of each build the sessions phase
	// runs twice over, and the expiry and replica-set phases once over,
	// alternating this, previous, previous, this.
	BaselineRounds int
	RedisBin       string
	WorkDir        string // parent of the run's temporary directory
	Keep           bool   // keep the temporary directory (data, server logs)
	Self           string // this executable, re-executed as client and null server
	Log            io.Writer
}

// Validate checks the modes, phases and sizes.
func (c *Config) Validate() error {
	for _, m := range c.Modes {
		if !slices.Contains(AllModes(), m) {
			return fmt.Errorf("unknown mode %q (want %v)", m, AllModes())
		}
	}
	for _, p := range c.Phases {
		if !slices.Contains(AllPhases(), p) {
			return fmt.Errorf("unknown phase %q (want %v)", p, AllPhases())
		}
	}
	switch {
	case c.Clients < 1:
		return fmt.Errorf("-clients must be at least 1")
	case c.Sessions < c.Clients:
		return fmt.Errorf("-sessions must be at least -clients")
	case c.StormDocs < 1 || c.StormWindow <= 0:
		return fmt.Errorf("-storm-docs and -storm-window must be positive")
	case c.BurstDocs < 1 || c.BurstMeasure <= 0:
		return fmt.Errorf("-burst-docs and -burst-measure must be positive")
	case c.Duration <= 0 || c.DurableDuration <= 0:
		return fmt.Errorf("durations must be positive")
	case c.BaselineBin != "" && c.BaselineRounds < 1:
		return fmt.Errorf("-baseline-rounds must be at least 1")
	case c.Neighbours < 0:
		return fmt.Errorf("-neighbour must not be negative")
	case c.StormCap < 0 || c.StormCap > 1:
		return fmt.Errorf("-storm-cap must be a share of each core, from 0 (none) to 1")
	case c.has(PhaseMigration) && (c.MigrateDocs < 1 || c.MigrateExpiring < 1 || c.MigrateWindow <= 0 ||
		c.AddShardSessions < c.Clients || c.AddShardMax <= 0):
		return fmt.Errorf("-migrate-docs, -migrate-expiring, -migrate-window and -add-shard-max must be positive, -add-shard-sessions at least -clients")
	}
	return nil
}

func (c *Config) has(phase string) bool { return slices.Contains(c.Phases, phase) }

// stormSpec is the storm these sizes give, spread and in the configured
// _id order, with no stream and no neighbours.
func (sz Sizes) stormSpec() StormSpec {
	return StormSpec{Docs: sz.StormDocs, Window: sz.StormWindow, Warmup: sz.Warmup,
		Baseline: sz.StormBaseline, PollEvery: sz.StormPoll, MaxDrain: sz.StormMaxDrain,
		Shuffled: sz.StormShuffled}
}
