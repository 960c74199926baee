package bench

import "testing"

// The replica set's side-by-side rows compare this build's run with the
// previous build's and stay empty when either is missing.
func TestBaselineReplSetRatios(t *testing.T) {
	now := &ReplSetResult{Majority: &DurableResult{WindowResult: WindowResult{OpsPerSec: 6000}}, StormDocs: 10,
		StormSecondary: Lateness{Upper: Summary{P99Ms: 400}}}
	before := &ReplSetResult{Majority: &DurableResult{WindowResult: WindowResult{OpsPerSec: 4000}}, StormDocs: 10,
		StormSecondary: Lateness{Upper: Summary{P99Ms: 1200}}}
	m := &ModeReport{ReplSet: now, BaselineReplSet: before}
	if v, _, ok := baselineMajority(m); !ok || v != 1.5 {
		t.Errorf("w:majority this / previous = %v, %v; want 1.5", v, ok)
	}
	if v, _, ok := baselineReplStorm(m); !ok || v != 3 {
		t.Errorf("storm previous / this = %v, %v; want 3", v, ok)
	}
	if _, _, ok := baselineMajority(&ModeReport{ReplSet: now}); ok {
		t.Error("a ratio without the previous build's run")
	}
	if _, _, ok := baselineReplStorm(&ModeReport{BaselineReplSet: before}); ok {
		t.Error("a ratio without this build's run")
	}
}
