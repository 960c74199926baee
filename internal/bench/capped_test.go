package bench

import "testing"

// The capped storms keep each build's worse round, and the row gives the
// build's and, with -baseline-bin, the previous build's.
func TestCappedStormRow(t *testing.T) {
	storm := func(p50, p99 float64, deleted int64) *ExpiryResult {
		e := &ExpiryResult{Docs: 1000, AllDeleted: deleted == 1000, Cap: 0.7, CapCores: 1,
			Baseline: WindowResult{OpsPerSec: 9000}, Storm: WindowResult{OpsPerSec: 5000}}
		e.Lateness.Upper.P50Ms, e.Lateness.Upper.P99Ms, e.Lateness.Deleted = p50, p99, deleted
		return e
	}
	first, second := storm(95, 157, 1000), storm(98, 191, 1000)
	if got := worseStorm(worseStorm(nil, first), second); got != second {
		t.Fatalf("worse of p99 157 and 191: got p99 %v", got.Lateness.Upper.P99Ms)
	}
	if got := worseStorm(second, first); got != second {
		t.Fatalf("worse of p99 191 and 157: got p99 %v", got.Lateness.Upper.P99Ms)
	}
	onTwo := *second
	onTwo.CapCores = 2
	for _, tc := range []struct {
		name string
		m    ModeReport
		want string
	}{
		{"not run", ModeReport{}, missing},
		{"this build", ModeReport{CappedExpiry: second},
			"0.70 of a core: 98.0 / 191 ms, sessions 9,000 → 5,000 ops/s"},
		{"shared, on two cores", ModeReport{CappedExpiry: &onTwo},
			"0.70 of each of 2 cores: 98.0 / 191 ms, sessions 9,000 → 5,000 ops/s"},
		{"beside the previous build, which left some", ModeReport{CappedExpiry: second, BaselineCappedExpiry: storm(110, 1627, 990)},
			"0.70 of a core: 98.0 / 191 ms, sessions 9,000 → 5,000 ops/s; previous build: 110 / 1,627 ms, sessions 9,000 → 5,000 ops/s, 10 not deleted"},
	} {
		if got := cappedCell(&tc.m); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
