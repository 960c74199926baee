package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"time"
)

// ModeReport is everything measured in one mode. A phase that failed has
// its error in Errors and no figures.
type ModeReport struct {
	Mode    string `json:"mode"`
	Skipped string `json:"skipped,omitempty"`
	// Sessions is each server's figures; Mayfly's, --auth's and the null
	// server's merge their SessionRounds (mergeRounds).
	Sessions      map[string]*SessionsResult `json:"sessions,omitempty"`
	SessionRounds []*SessionsResult          `json:"session_rounds,omitempty"`
	// StreamRounds are the session workload's rounds on one server
	// without and with change streams open (streamRoundStreams).
	StreamRounds []*SessionsResult `json:"stream_rounds,omitempty"`
	Durable      *DurableReport    `json:"durable,omitempty"`
	Expiry       *ExpiryResult     `json:"expiry,omitempty"`
	Burst        *ExpiryResult     `json:"burst,omitempty"`
	Memory       *MemoryResult     `json:"memory,omitempty"`
	ReplSet      *ReplSetResult    `json:"replset,omitempty"`
	// Baseline is every round of the phases measured beside the previous
	// build (-baseline-bin), this build's rounds among them.
	Baseline *BaselineRounds   `json:"baseline,omitempty"`
	Errors   map[string]string `json:"errors,omitempty"`
	// Sharded is the router's overhead and scaling over capped shards.
	Sharded *ShardedResult `json:"sharded,omitempty"`
	// Migration is chunk migrations: one move's rate and cost, the
	// sessions while chunks move, a shard added under load.
	Migration *MigrationResult `json:"migration,omitempty"`
	// StreamStorms are the storm with a change stream of its expiries
	// open, without and with pre-images (-storm-streams).
	StreamStorms []*ExpiryResult `json:"stream_storms,omitempty"`
	// NeighbourExpiry is the storm with CPU-bound neighbour processes
	// running (-neighbour).
	NeighbourExpiry *ExpiryResult `json:"neighbour_expiry,omitempty"`
	// BaselineNeighbourExpiry is the previous build's (-baseline-bin).
	BaselineNeighbourExpiry *ExpiryResult `json:"baseline_neighbour_expiry,omitempty"`
	// CappedExpiry is the storm on a server capped at StormCap of each
	// core it may run on (-storm-cap); BaselineCappedExpiry the previous
	// build's.
	CappedExpiry         *ExpiryResult `json:"capped_expiry,omitempty"`
	BaselineCappedExpiry *ExpiryResult `json:"baseline_capped_expiry,omitempty"`
	// Txn is transfers in transactions against the same updates without.
	Txn *TxnResult `json:"txn,omitempty"`
}

// Report is a whole run, as written to JSON.
type Report struct {
	Started time.Time       `json:"started"`
	Seconds float64         `json:"seconds"`
	Short   bool            `json:"short"`
	Machine Machine         `json:"machine"`
	Sizes   Sizes           `json:"sizes"`
	Modes   []*ModeReport   `json:"modes"`
	Targets []*TargetResult `json:"targets"`
}

// Run runs every configured mode and phase and evaluates the targets.
// Failures of single phases are recorded in the report, not returned.
func Run(ctx context.Context, cfg *Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rep := &Report{Started: time.Now(), Short: cfg.Short, Sizes: cfg.Sizes, Machine: detectMachine(cfg.RedisBin)}
	work, err := os.MkdirTemp(cfg.WorkDir, "mayfly-bench-")
	if err != nil {
		return nil, fmt.Errorf("work directory: %w", err)
	}
	if cfg.Keep {
		fmt.Fprintf(cfg.Log, "keeping %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}
	bin := cfg.MayflyBin
	if bin == "" {
		fmt.Fprintln(cfg.Log, "building ./cmd/mayfly")
		if bin, err = buildMayfly(ctx, work); err != nil {
			return nil, err
		}
	}
	for _, mode := range cfg.Modes {
		rep.Modes = append(rep.Modes, runMode(ctx, cfg, mode, bin, work))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	rep.Targets = evaluate(rep)
	rep.Seconds = time.Since(rep.Started).Seconds()
	return rep, nil
}

// pinnable says why the pinned mode cannot run here, or "" if it can.
func pinnable() string {
	if runtime.NumCPU() < 2 {
		return "fewer than 2 CPUs"
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return "no taskset (util-linux)"
	}
	return ""
}

func runMode(ctx context.Context, cfg *Config, mode, bin, work string) *ModeReport {
	rep := &ModeReport{Mode: mode, Errors: map[string]string{}}
	m := &modeRun{cfg: cfg, mode: mode, mayflyBin: bin, serverCPU: -1, clientCPU: -1}
	if mode == ModePinned {
		if why := pinnable(); why != "" {
			rep.Skipped = why
			return rep
		}
		m.serverCPU, m.clientCPU = 0, 1
	}
	if cfg.BaselineBin != "" {
		rep.Baseline = &BaselineRounds{}
	}
	var err error
	if m.work, err = mkdir(work, mode); err != nil {
		rep.Errors["mode"] = err.Error()
		return rep
	}
	note := func(phase string, err error) {
		if err != nil {
			rep.Errors[phase] = err.Error()
			m.logf("%s phase failed: %v", phase, err)
		}
	}
	if cfg.has(PhaseSessions) {
		rep.Sessions, rep.SessionRounds, err = m.sessionsPhase(ctx)
		note(PhaseSessions, err)
		if rep.Baseline != nil {
			rep.Baseline.Sessions, err = m.baselineSessionRounds(ctx)
			note(PhaseSessions+" (baseline)", err)
		}
		if cfg.Sizes.Streams > 0 {
			rep.StreamRounds, err = m.streamRounds(ctx)
			note(PhaseSessions+" (streams)", err)
		}
	}
	if cfg.has(PhaseDurable) {
		rep.Durable, err = m.durablePhase(ctx)
		note(PhaseDurable, err)
	}
	if cfg.has(PhaseExpiry) {
		if rep.Baseline != nil {
			err = m.baselineExpiryRounds(ctx, rep.Baseline)
			rep.Expiry, rep.Burst = firstOf(rep.Baseline.Storms, expiryOnBaseline), firstOf(rep.Baseline.Bursts, expiryOnBaseline)
		} else {
			rep.Expiry, rep.Burst, err = m.expiryPhase(ctx)
		}
		note(PhaseExpiry, err)
		if cfg.Neighbours > 0 {
			rep.NeighbourExpiry, err = m.neighbourStorm(ctx, nameMayfly)
			note(PhaseExpiry+" (neighbours)", err)
		}
		if cfg.Neighbours > 0 && cfg.BaselineBin != "" {
			rep.BaselineNeighbourExpiry, err = m.neighbourStorm(ctx, nameBaseline)
			note(PhaseExpiry+" (baseline, neighbours)", err)
		}
		if cfg.StormCap > 0 {
			rep.CappedExpiry, rep.BaselineCappedExpiry, err = m.cappedStorms(ctx)
			note(PhaseExpiry+" (capped)", err)
		}
		if cfg.StormStreams {
			rep.StreamStorms, err = m.streamStorms(ctx)
			note(PhaseExpiry+" (streams)", err)
		}
	}
	if cfg.has(PhaseMemory) {
		rep.Memory, err = m.memoryPhase(ctx)
		note(PhaseMemory, err)
	}
	if cfg.has(PhaseReplSet) {
		if rep.Baseline != nil {
			err = m.baselineReplSetRounds(ctx, rep.Baseline)
			rep.ReplSet = firstOf(rep.Baseline.ReplSets, replSetOnBaseline)
		} else {
			rep.ReplSet, err = m.replSetPhase(ctx, nameMayfly)
		}
		note(PhaseReplSet, err)
	}
	if cfg.has(PhaseSharded) && mode == ModeShared { // its servers are not pinned
		rep.Sharded, err = m.shardedPhase(ctx)
		note(PhaseSharded, err)
	}
	if cfg.has(PhaseMigration) && mode == ModeShared { // as the sharded phase
		rep.Migration, err = m.migrationPhase(ctx)
		note(PhaseMigration, err)
	}
	if cfg.has(PhaseTxn) {
		rep.Txn, err = m.txnPhase(ctx)
		note(PhaseTxn, err)
	}
	return rep
}
