package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// WriteJSON writes the report to path, creating its directory.
func WriteJSON(rep *Report, path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// row is a line of the table: a figure per mode, and a goal if it is one
// of the targets.
type row struct {
	label string
	phase string
	cell  func(m *ModeReport) string
}

const missing = "—"

func sessionsCell(kind string) func(*ModeReport) string {
	return func(m *ModeReport) string {
		r := m.Sessions[kind]
		if r == nil {
			return missing
		}
		s := fmt.Sprintf("%s (%s / %s ms)", fmtN(r.OpsPerSec), fmtMs(r.Latency.P50Ms), fmtMs(r.Latency.P99Ms))
		if r.Mix.Errors > 0 {
			s += fmt.Sprintf(", %d errors", r.Mix.Errors)
		}
		return s
	}
}

// streamsCell is the session rate with change streams open over the rate
// without, both the means of their rounds on one server, and what the
// streams received.
func streamsCell(m *ModeReport) string {
	with, without := splitStreamRounds(m.StreamRounds)
	if len(with) == 0 || len(without) == 0 || meanOps(without) == 0 {
		return missing
	}
	var events int64 = -1
	var p50, p99 float64
	for _, r := range with {
		if events < 0 || r.Streams.MinEvents < events {
			events = r.Streams.MinEvents
		}
		p50, p99 = max(p50, r.Streams.Lag.P50Ms), max(p99, r.Streams.Lag.P99Ms)
	}
	return fmt.Sprintf("%s (%s / %s ops/s over %d rounds each; %d streams × ≥ %s events a round, lag p50 %s / p99 %s ms at most)",
		fmtRatio(meanOps(with)/meanOps(without)), fmtN(meanOps(with)), fmtN(meanOps(without)), len(with),
		with[0].Streams.Streams, fmtN(float64(events)), fmtMs(p50), fmtMs(p99))
}

// splitStreamRounds parts the rounds run with change streams from those
// run without.
func splitStreamRounds(rounds []*SessionsResult) (with, without []*SessionsResult) {
	for _, r := range rounds {
		if r.Streams != nil {
			with = append(with, r)
		} else {
			without = append(without, r)
		}
	}
	return with, without
}

// meanOps is the mean session rate of the runs.
func meanOps(runs []*SessionsResult) float64 {
	if len(runs) == 0 {
		return 0
	}
	var sum float64
	for _, r := range runs {
		sum += r.OpsPerSec
	}
	return sum / float64(len(runs))
}

func nullOverRedis(m *ModeReport) string {
	n, r := m.Sessions[nameNull], m.Sessions[nameRedis]
	if n == nil || r == nil || r.OpsPerSec == 0 {
		return missing
	}
	return fmtRatio(n.OpsPerSec / r.OpsPerSec)
}

func cpuCell(m *ModeReport) string {
	var parts []string
	for _, k := range []string{nameMayfly, nameNull, nameRedis} {
		if r := m.Sessions[k]; r != nil {
			parts = append(parts, fmt.Sprintf("%.1f", r.ServerCPUPerOpUs))
		} else {
			parts = append(parts, missing)
		}
	}
	return strings.Join(parts, " / ")
}

func fsyncCell(m *ModeReport) string {
	if m.Durable == nil || m.Durable.Fsync == nil {
		return missing
	}
	f := m.Durable.Fsync
	return fmt.Sprintf("%s (p50 %s ms)", fmtN(f.FsyncPerSec), fmtMs(f.Latency.P50Ms))
}

func insertsCell(journal bool) func(*ModeReport) string {
	return func(m *ModeReport) string {
		if m.Durable == nil || len(m.Durable.Runs) == 0 {
			return missing
		}
		var parts []string
		for _, r := range m.Durable.Runs {
			if r.Journal == journal {
				parts = append(parts, fmtN(r.OpsPerSec))
			}
		}
		return strings.Join(parts, " / ")
	}
}

func stormCell(m *ModeReport) string {
	e := m.Expiry
	if e == nil {
		return missing
	}
	order := "_ids in expiry order"
	if e.Shuffled {
		order = "_ids in random order"
	}
	return fmt.Sprintf("%s over %.0f s (%s/s offered; %s; %s/s deleted)", fmtN(float64(e.Docs)), e.WindowSeconds,
		fmtN(e.OfferedPerSec), order, fmtN(e.Lateness.PerSec))
}

func latenessCell(m *ModeReport) string {
	e := m.Expiry
	if e == nil {
		return missing
	}
	l := e.Lateness
	return fmt.Sprintf("%s / %s / %s ms (lower bound p99 %s; sampling gap p50 %s ms)",
		fmtMs(l.Upper.P50Ms), fmtMs(l.Upper.P99Ms), fmtMs(l.Upper.MaxMs), fmtMs(l.Lower.P99Ms), fmtMs(l.GapP50Ms))
}

// cappedCell is the storm's deletion lateness on a server capped at a
// share of each core it may run on, this build's worse round and the
// previous build's.
func cappedCell(m *ModeReport) string {
	c := m.CappedExpiry
	if c == nil {
		return missing
	}
	s := capText(c.Cap, c.CapCores) + ": " + cappedStormText(c)
	if b := m.BaselineCappedExpiry; b != nil {
		s += "; previous build: " + cappedStormText(b)
	}
	return s
}

// capText names a cap at share of each of n cores.
func capText(share float64, n int) string {
	if n <= 1 {
		return fmt.Sprintf("%.2f of a core", share)
	}
	return fmt.Sprintf("%.2f of each of %d cores", share, n)
}

func cappedStormText(e *ExpiryResult) string {
	s := fmt.Sprintf("%s / %s ms, sessions %s → %s ops/s", fmtMs(e.Lateness.Upper.P50Ms), fmtMs(e.Lateness.Upper.P99Ms),
		fmtN(e.Baseline.OpsPerSec), fmtN(e.Storm.OpsPerSec))
	if !e.AllDeleted {
		s += fmt.Sprintf(", %s not deleted", fmtN(float64(int64(e.Docs)-e.Lateness.Deleted)))
	}
	return s
}

// neighbourCell is the storm's deletion lateness without and with the
// CPU-bound neighbours, side by side, with how busy they kept the machine.
func neighbourCell(m *ModeReport) string {
	e, n := m.Expiry, m.NeighbourExpiry
	if e == nil || n == nil {
		return missing
	}
	s := fmt.Sprintf("%s / %s → %s / %s ms (%d neighbours kept %.2f cores busy; load average %s → %s)",
		fmtMs(e.Lateness.Upper.P50Ms), fmtMs(e.Lateness.Upper.P99Ms), fmtMs(n.Lateness.Upper.P50Ms), fmtMs(n.Lateness.Upper.P99Ms),
		n.Neighbours, n.NeighbourCores, e.LoadAvg, n.LoadAvg)
	if !n.AllDeleted {
		s += fmt.Sprintf("; %s not deleted", fmtN(float64(int64(n.Docs)-n.Lateness.Deleted)))
	}
	if e.Sched != nil && n.Sched != nil {
		s += fmt.Sprintf("; server ran %.2f → %.2f cores, waited for a CPU %.2f → %.2f", e.Sched.RunCores, n.Sched.RunCores, e.Sched.WaitCores, n.Sched.WaitCores)
	}
	return s
}

// streamStormCell is the storm with a change stream of its expiries open,
// without and with pre-images: the events' wallTime − expiredAt, and the
// storm's own deletion lateness.
func streamStormCell(m *ModeReport) string {
	var parts []string
	for _, e := range m.StreamStorms {
		ev := e.Events
		if ev == nil {
			continue
		}
		label := "pre-images off"
		if ev.PreImages {
			label = "on"
		}
		if e.Server == nameBaseline {
			label += " (baseline build)"
		}
		part := fmt.Sprintf("%s: events %s / %s ms, deletion p99 %s ms",
			label, fmtMs(ev.Lateness.P50Ms), fmtMs(ev.Lateness.P99Ms), fmtMs(e.Lateness.Upper.P99Ms))
		if ev.Events < ev.Expected {
			part += fmt.Sprintf(" (only %s of %s events by the drain's end)", fmtN(float64(ev.Events)), fmtN(float64(ev.Expected)))
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return missing
	}
	return strings.Join(parts, "; ")
}

func stormSessionsCell(pick func(*ModeReport) *ExpiryResult) func(*ModeReport) string {
	return func(m *ModeReport) string {
		e := pick(m)
		if e == nil {
			return missing
		}
		return fmt.Sprintf("%s / %s", fmtN(e.Baseline.OpsPerSec), fmtN(e.Storm.OpsPerSec))
	}
}

func spreadStorm(m *ModeReport) *ExpiryResult { return m.Expiry }
func burstStorm(m *ModeReport) *ExpiryResult  { return m.Burst }

func burstCell(m *ModeReport) string {
	e := m.Burst
	if e == nil {
		return missing
	}
	return fmt.Sprintf("%s expiring at one instant; sessions measured %.0f s from it; deleted %s in %.1f s",
		fmtN(float64(e.Docs)), e.WindowSeconds, fmtN(float64(e.Lateness.Deleted)), e.Lateness.Upper.MaxMs/1000)
}

func rssCell(m *ModeReport) string {
	r := m.Memory
	if r == nil || r.MayflyRSS == 0 {
		return missing
	}
	return fmt.Sprintf("%s / %s (idle %s / %s)", fmtMiB(r.MayflyRSS), fmtMiB(r.RedisRSS), fmtMiB(r.MayflyIdleRSS), fmtMiB(r.RedisIdleRSS))
}

// targetCell shows a target's figure and verdict in one mode.
func targetCell(rep *Report, name string) func(*ModeReport) string {
	return func(m *ModeReport) string {
		for _, t := range rep.Targets {
			if t.Name != name || t.Mode != m.Mode {
				continue
			}
			if !t.Measured {
				return "not measured"
			}
			v := fmtRatio(t.Value)
			switch name {
			case tInvisible:
				v = fmtN(t.Value)
			case tLateness, tLatenessNb, tMigrationLateness:
				v = fmtMs(t.Value)
			case tExpRate:
				v = fmtN(t.Value)
			}
			verdict := "met"
			if !t.Met {
				verdict = "**MISSED**"
			}
			if t.Note != "" {
				v += " (" + strings.TrimPrefix(t.Note, incomplete) + ")"
			}
			return v + " — " + verdict
		}
		return missing
	}
}

func rows(rep *Report, sz Sizes) []row {
	t := func(name string, phase string) row {
		return row{label: "**" + name + "**", phase: phase, cell: targetCell(rep, name)}
	}
	return append([]row{
		{"sessions ops/s, Mayfly (p50 / p99)", PhaseSessions, sessionsCell(nameMayfly)},
		{"sessions ops/s, Mayfly --auth (p50 / p99)", PhaseSessions, sessionsCell(nameMayflyAuth)},
		{"sessions ops/s, Redis (p50 / p99)", PhaseSessions, sessionsCell(nameRedis)},
		{"sessions ops/s, null server (p50 / p99)", PhaseSessions, sessionsCell(nameNull)},
		t(tMayflyNull, PhaseSessions),
		t(tMayflyRedis, PhaseSessions),
		t(tAuth, PhaseSessions),
		{"sessions ops/s, null server / Redis", PhaseSessions, nullOverRedis},
		{"sessions with change streams / without (goal ≥ 0.9)", PhaseSessions, streamsCell},
		{"server CPU µs per op: Mayfly / null / Redis", PhaseSessions, cpuCell},
		t(tCPU, PhaseSessions),
		t(tP99, PhaseSessions),
		{"raw fsync/s, 512 B write + fsync", PhaseDurable, fsyncCell},
		{fmt.Sprintf("inserts/s without j, %s clients", joinInts(sz.DurableClients)), PhaseDurable, insertsCell(false)},
		{fmt.Sprintf("inserts/s j:true, %s clients", joinInts(sz.DurableClients)), PhaseDurable, insertsCell(true)},
		t(tDurable, PhaseDurable),
		{"expiry storm", PhaseExpiry, stormCell},
		t(tInvisible, PhaseExpiry),
		{"lateness to deletion p50 / p99 / max (upper bounds)", PhaseExpiry, latenessCell},
		t(tLateness, PhaseExpiry),
		{"lateness p50 / p99 without → with CPU-bound neighbours", PhaseExpiry, neighbourCell},
		t(tLatenessNb, PhaseExpiry),
		{"lateness p50 / p99 with the server capped (this build; previous build)", PhaseExpiry, cappedCell},
		{"sessions ops/s without / during storm", PhaseExpiry, stormSessionsCell(spreadStorm)},
		{"storm with a change stream: expiry events wallTime − expiredAt p50 / p99", PhaseExpiry, streamStormCell},
		{"expiry burst", PhaseExpiry, burstCell},
		t(tExpRate, PhaseExpiry),
		{"sessions ops/s without / during burst", PhaseExpiry, stormSessionsCell(burstStorm)},
		t(tStorm, PhaseExpiry),
		{fmt.Sprintf("RSS with %s sessions, Mayfly / Redis", fmtN(float64(sz.MemorySessions))), PhaseMemory, rssCell},
		t(tRSS, PhaseMemory),
	}, slices.Concat(replSetRows(rep), baselineRows(rep), shardedRows(rep), migrationRows(rep), txnRows(rep))...)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " / ")
}

func modeTitle(m *ModeReport) string {
	switch {
	case m.Skipped != "":
		return m.Mode + " (skipped: " + m.Skipped + ")"
	case m.Mode == ModePinned:
		return "pinned: server CPU 0, clients CPU 1"
	}
	return "shared: all on both cores"
}

// Table renders the report as one Markdown table, with the machine above
// it and failures and the count of targets below.
func Table(rep *Report) string {
	var b strings.Builder
	kind := "full"
	if rep.Short {
		kind = "short (-short)"
	}
	mc := rep.Machine
	fmt.Fprintf(&b, "mayfly-bench, %s run of %.0f s, %s\n", kind, rep.Seconds, rep.Started.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "machine: %d × %s, Linux %s, %s, %s; load average at start %s\n",
		mc.NProc, mc.CPUModel, mc.Kernel, mc.Go, mc.Redis, mc.LoadAvg)
	fmt.Fprintf(&b, "%s preloaded sessions, %d clients, %v measured per sessions run\n\n",
		fmtN(float64(rep.Sizes.Sessions)), rep.Sizes.Clients, rep.Sizes.Duration)
	b.WriteString("| figure |")
	for _, m := range rep.Modes {
		b.WriteString(" " + modeTitle(m) + " |")
	}
	b.WriteString(" target |\n|---|")
	for range rep.Modes {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	goals := map[string]string{}
	for _, d := range targetDefs() {
		goals["**"+d.name+"**"] = d.goal
	}
	for _, r := range rows(rep, rep.Sizes) {
		b.WriteString("| " + r.label + " |")
		for _, m := range rep.Modes {
			b.WriteString(" " + cellFor(m, r) + " |")
		}
		b.WriteString(" " + goals[r.label] + " |\n")
	}
	writeFooter(&b, rep)
	return b.String()
}

func cellFor(m *ModeReport, r row) string {
	if m.Skipped != "" {
		return missing
	}
	if _, failed := m.Errors[r.phase]; failed {
		return "failed"
	}
	return r.cell(m)
}

func writeFooter(b *strings.Builder, rep *Report) {
	var met, missed, unmeasured int
	var names []string
	for _, t := range rep.Targets {
		switch {
		case !t.Measured:
			unmeasured++
		case t.Met:
			met++
		default:
			missed++
			names = append(names, t.Name+" ("+t.Mode+")")
		}
	}
	fmt.Fprintf(b, "\ntargets: %d met, %d missed, %d not measured\n", met, missed, unmeasured)
	for _, n := range names {
		fmt.Fprintf(b, "  missed: %s\n", n)
	}
	for _, m := range rep.Modes {
		for phase, err := range m.Errors {
			fmt.Fprintf(b, "  %s %s phase failed: %s\n", m.Mode, phase, err)
		}
	}
}
