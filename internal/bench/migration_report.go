package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The migration phase's targets: moving chunks costs the session
// workload little, and expiry stays exact meanwhile.
const (
	tMigrationOps      = "sessions ops/s through the router while chunks move / without"
	tMigrationLateness = "expiry lateness to deletion while chunks move, p99 (ms)"
)

func migrationTargetDefs() []targetDef {
	return []targetDef{
		{tMigrationOps, "≥ 0.7", atLeast(0.7), migrationOps},
		{tMigrationLateness, "≤ 250", atMost(250), migrationLateness},
	}
}

func moving(m *ModeReport) *MovingResult {
	if m.Migration == nil {
		return nil
	}
	return m.Migration.Moving
}

func migrationOps(m *ModeReport) (float64, string, bool) {
	r := moving(m)
	if r == nil || r.Without.OpsPerSec == 0 {
		return 0, "", false
	}
	note := fmt.Sprintf("%s / %s; %d moves", fmtN(r.With.OpsPerSec), fmtN(r.Without.OpsPerSec), r.Moves.Moves)
	if r.Moves.Moves == 0 {
		return r.With.OpsPerSec / r.Without.OpsPerSec, incomplete + note + ": no chunk moved", true
	}
	return r.With.OpsPerSec / r.Without.OpsPerSec, note, true
}

func migrationLateness(m *ModeReport) (float64, string, bool) {
	r := moving(m)
	if r == nil || r.LatenessWith.Lateness.Deleted == 0 {
		return 0, "", false
	}
	w := r.LatenessWith
	if !r.AllDeleted {
		return w.Lateness.Upper.P99Ms, fmt.Sprintf(incomplete+"%s of %s not deleted by the end of the drain; p99 of the deleted ones",
			fmtN(float64(int64(w.Expiring)-w.Lateness.Deleted)), fmtN(float64(w.Expiring))), true
	}
	return w.Lateness.Upper.P99Ms, fmt.Sprintf("%s documents; %s ms without moves", fmtN(float64(w.Expiring)),
		fmtMs(r.LatenessWithout.Lateness.Upper.P99Ms)), true
}

func migrationRows(rep *Report) []row {
	t := func(name string) row {
		return row{label: "**" + name + "**", phase: PhaseMigration, cell: targetCell(rep, name)}
	}
	return []row{
		{"moveChunk of a populated chunk, idle cluster: documents/s", PhaseMigration, moveRateCell},
		{"CPU s per 1,000 documents moved: donor / recipient / router", PhaseMigration, moveCPUCell},
		{"sessions ops/s through the router, 2 shards: without / while chunks move (moves)", PhaseMigration, movingCell},
		t(tMigrationOps),
		{"expiry lateness to deletion without / while chunks move, p50 / p99 / max (upper bounds)", PhaseMigration, movingLatenessCell},
		t(tMigrationLateness),
		{"third shard added under load (0.3 core each): until it serves a third of the ops", PhaseMigration, addShardCell},
	}
}

func moveResult(m *ModeReport) *MoveResult {
	if m.Migration == nil {
		return nil
	}
	return m.Migration.Move
}

func moveRateCell(m *ModeReport) string {
	r := moveResult(m)
	if r == nil {
		return missing
	}
	return fmt.Sprintf("%s (%s documents in %.1f s; router's millis %s)", fmtN(r.DocsPerSec), fmtN(float64(r.Docs)), r.Seconds, fmtN(float64(r.ServerMillis)))
}

func moveCPUCell(m *ModeReport) string {
	r := moveResult(m)
	if r == nil {
		return missing
	}
	return fmt.Sprintf("%.3f / %.3f / %.3f", r.DonorCPUPerK, r.RecipientCPUPerK, r.RouterCPUPerK)
}

func movingCell(m *ModeReport) string {
	r := moving(m)
	if r == nil {
		return missing
	}
	s := fmt.Sprintf("%s / %s (%d chunks; %d moves, p50 %s s, critical section p50 %s max %s ms", fmtN(r.Without.OpsPerSec),
		fmtN(r.With.OpsPerSec), r.Chunks, r.Moves.Moves, fmtSeconds(r.Moves.Duration.P50Ms),
		fmtMs(r.Moves.Critical.P50Ms), fmtMs(r.Moves.Critical.MaxMs))
	if r.Moves.Failed > 0 {
		s += fmt.Sprintf("; %d failed: %s", r.Moves.Failed, r.Moves.FirstErr)
	}
	s += fmt.Sprintf("; p99 %s → %s ms", fmtMs(r.Without.Latency.P99Ms), fmtMs(r.With.Latency.P99Ms))
	if r.Mix.Errors > 0 {
		s += fmt.Sprintf("; %d errors", r.Mix.Errors)
	}
	var cpu []string
	for _, p := range r.CPU {
		cpu = append(cpu, fmt.Sprintf("%s %.2f → %.2f", p.Name, p.Without, p.With))
	}
	if len(cpu) > 0 {
		s += "; cores " + strings.Join(cpu, ", ")
	}
	return s + ")"
}

func fmtSeconds(ms float64) string { return fmt.Sprintf("%.1f", ms/1000) }

func movingLatenessCell(m *ModeReport) string {
	r := moving(m)
	if r == nil {
		return missing
	}
	return fmt.Sprintf("without: %s; with: %s (%s per shard; sampling gap p50 %s ms)", windowLatenessCell(r.LatenessWithout),
		windowLatenessCell(r.LatenessWith), joinInts(r.PerShard), fmtMs(r.LatenessWith.Lateness.GapP50Ms))
}

// windowLatenessCell is one window's lateness p50 / p99 / max and each
// shard's p99.
func windowLatenessCell(w WindowLateness) string {
	l := w.Lateness
	p99s := make([]string, len(w.ShardP99Ms))
	for i, v := range w.ShardP99Ms {
		p99s[i] = fmtMs(v)
	}
	return fmt.Sprintf("%s / %s / %s ms of %s (p99 per shard %s)", fmtMs(l.Upper.P50Ms), fmtMs(l.Upper.P99Ms), fmtMs(l.Upper.MaxMs),
		fmtN(float64(w.Expiring)), strings.Join(p99s, " / "))
}

func addShardCell(m *ModeReport) string {
	if m.Migration == nil || m.Migration.AddShard == nil {
		return missing
	}
	r := m.Migration.AddShard
	var chunks []string
	for _, name := range slices.Sorted(maps.Keys(r.ChunksAfter)) {
		chunks = append(chunks, fmt.Sprintf("%s %d", name, r.ChunksAfter[name]))
	}
	s := fmtReached(r) + fmt.Sprintf(" (share ≥ %.2f for %d s; chunks %s; all shards' ops/s %s before", r.Want, r.Hold,
		strings.Join(chunks, ", "), fmtN(r.OpsBefore))
	if r.Reached {
		s += ", " + fmtN(r.OpsAfter) + " after"
	}
	if len(r.Throttling) > 0 {
		s += "; periods throttled by the caps " + fmtShares(r.Throttling)
	}
	return s + ")"
}
