package bench

import (
	"slices"
	"testing"
)

// Every server a session target compares has as many rounds as the others,
// in an order that reads the same backwards, so a steady drift of the
// machine weighs on each alike.
func TestSessionRoundKindsBalanced(t *testing.T) {
	kinds := sessionRoundKinds()
	reversed := slices.Clone(kinds)
	slices.Reverse(reversed)
	if !slices.Equal(kinds, reversed) {
		t.Errorf("sessionRoundKinds() = %v: not a palindrome", kinds)
	}
	counts := map[string]int{}
	for _, k := range kinds {
		counts[k]++
	}
	for _, k := range []string{nameMayfly, nameMayflyAuth, nameNull} {
		if counts[k] != 2 {
			t.Errorf("%s has %d rounds, want 2 (%v)", k, counts[k], kinds)
		}
	}
	if len(counts) != 3 {
		t.Errorf("rounds of %d servers, want the 3 the targets compare: %v", len(counts), kinds)
	}
}

func round(server string, ops, p99, cpu, maxMs float64, errs int64) *SessionsResult {
	r := &SessionsResult{Server: server, ServerCPUPerOpUs: cpu}
	r.OpsPerSec, r.Seconds = ops, 10
	r.Latency = Summary{Count: uint64(ops * 10), P50Ms: p99 / 4, P99Ms: p99, MaxMs: maxMs}
	r.Mix = MixResult{Ops: map[string]int64{"touch": int64(ops * 7)}, Errors: errs}
	return r
}

// A server's figures are the medians of its own rounds, never of another
// server's; counts add up and the longest latency is the longest of all.
func TestMergeRounds(t *testing.T) {
	rounds := []*SessionsResult{
		round(nameMayfly, 1000, 10, 50, 30, 0),
		round(nameMayflyAuth, 5000, 99, 99, 99, 0),
		round(nameMayfly, 3000, 20, 70, 80, 2),
		round(nameMayfly, 2000, 12, 60, 40, 1),
	}
	got := mergeRounds(rounds, nameMayfly)
	if got.OpsPerSec != 2000 || got.Latency.P99Ms != 12 || got.Latency.P50Ms != 3 || got.ServerCPUPerOpUs != 60 {
		t.Errorf("medians: ops %v p99 %v p50 %v cpu %v, want 2000 12 3 60",
			got.OpsPerSec, got.Latency.P99Ms, got.Latency.P50Ms, got.ServerCPUPerOpUs)
	}
	if got.Latency.MaxMs != 80 || got.Seconds != 30 || got.Latency.Count != 60000 {
		t.Errorf("max %v seconds %v count %v, want 80 30 60000", got.Latency.MaxMs, got.Seconds, got.Latency.Count)
	}
	if got.Mix.Errors != 3 || got.Mix.Ops["touch"] != 42000 {
		t.Errorf("mix %+v, want 3 errors and 42000 touches", got.Mix)
	}
	if rounds[0].Mix.Errors != 0 || rounds[0].Seconds != 10 {
		t.Errorf("merging changed a round: %+v", rounds[0])
	}
	if two := mergeRounds(rounds[:3], nameMayfly); two.OpsPerSec != 2000 {
		t.Errorf("two rounds: ops %v, want their mean 2000", two.OpsPerSec)
	}
	if mergeRounds(rounds, nameNull) != nil {
		t.Error("a server without rounds merged into a result")
	}
}
