package bench

import "testing"

// The replica set's side-by-side rows compare the medians of this build's
// rounds with the previous build's and stay empty when either is missing.
func TestBaselineReplSetRatios(t *testing.T) {
	set := func(server string, ops, p99 float64) *ReplSetResult {
		return &ReplSetResult{Server: server, Majority: &DurableResult{WindowResult: WindowResult{OpsPerSec: ops}},
			StormDocs: 10, StormSecondary: Lateness{Upper: Summary{P99Ms: p99}}}
	}
	m := &ModeReport{Baseline: &BaselineRounds{ReplSets: []*ReplSetResult{
		set(nameMayfly, 6000, 400), set(nameBaseline, 4000, 1200), set(nameBaseline, 4000, 1200), set(nameMayfly, 6000, 400),
	}}}
	if v, _, ok := baselineMajority(m); !ok || v != 1.5 {
		t.Errorf("w:majority this / previous = %v, %v; want 1.5", v, ok)
	}
	if v, _, ok := baselineReplStorm(m); !ok || v != 3 {
		t.Errorf("storm previous / this = %v, %v; want 3", v, ok)
	}
	only := &ModeReport{Baseline: &BaselineRounds{ReplSets: []*ReplSetResult{set(nameMayfly, 6000, 400)}}}
	if _, _, ok := baselineMajority(only); ok {
		t.Error("a ratio without the previous build's run")
	}
	if _, _, ok := baselineReplStorm(&ModeReport{}); ok {
		t.Error("a ratio without any run")
	}
}

// The order alternates ABBA so a steady drift weighs on both builds alike,
// and each side gets its n rounds.
func TestBaselineOrder(t *testing.T) {
	for n := 1; n <= 6; n++ {
		order := baselineOrder(n)
		this := 0
		for _, o := range order {
			if o {
				this++
			}
		}
		if len(order) != 2*n || (n%2 == 0 && this != n) {
			t.Errorf("n=%d: %v", n, order)
		}
	}
	want := []bool{true, false, false, true, true, false, false, true}
	for i, o := range baselineOrder(4) {
		if o != want[i] {
			t.Fatalf("baselineOrder(4) = %v, want %v", baselineOrder(4), want)
		}
	}
}

// The sessions ratio is of medians: one wild round on either side does not
// move it.
func TestBaselineSessionsMedian(t *testing.T) {
	run := func(server string, ops, cpu float64) *SessionsResult {
		return &SessionsResult{Server: server, WindowResult: WindowResult{OpsPerSec: ops}, ServerCPUPerOpUs: cpu}
	}
	m := &ModeReport{Baseline: &BaselineRounds{Sessions: []*SessionsResult{
		run(nameMayfly, 1000, 100), run(nameBaseline, 1000, 100), run(nameBaseline, 3000, 20),
		run(nameMayfly, 1000, 100), run(nameMayfly, 200, 500), run(nameBaseline, 1000, 100),
	}}}
	if v, _, ok := baselineSessions(opsPerSec, false, "/s")(m); !ok || v != 1 {
		t.Errorf("sessions this / previous = %v, %v; want 1", v, ok)
	}
	if v, _, ok := baselineSessions(cpuPerOp, true, " µs")(m); !ok || v != 1 {
		t.Errorf("CPU per op previous / this = %v, %v; want 1", v, ok)
	}
}
