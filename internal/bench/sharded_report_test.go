package bench

import "testing"

func TestScalingTakesTheMedianWindow(t *testing.T) {
	rounds := func(rates ...float64) []*SessionsResult {
		var out []*SessionsResult
		for _, r := range rates {
			out = append(out, &SessionsResult{WindowResult: WindowResult{OpsPerSec: r}})
		}
		return out
	}
	for _, tc := range []struct {
		rates []float64
		want  float64
	}{
		{[]float64{2130, 1697, 1781}, 1781},
		{[]float64{5000}, 5000},
		{[]float64{3, 1, 2, 4}, 2},
	} {
		if got := medianRound(rounds(tc.rates...)).OpsPerSec; got != tc.want {
			t.Errorf("medianRound(%v) = %v, want %v", tc.rates, got, tc.want)
		}
	}
	one := &ScalingRun{Shards: 1, SessionsRounds: rounds(2130, 1697, 1781), Scans: &WindowResult{}}
	three := &ScalingRun{Shards: 3, SessionsRounds: rounds(5167, 5260, 5270), Scans: &WindowResult{}}
	one.Sessions, three.Sessions = medianRound(one.SessionsRounds), medianRound(three.SessionsRounds)
	m := &ModeReport{Sharded: &ShardedResult{CoresPerShard: scalingCores, Scaling: []*ScalingRun{one, three}}}
	got, _, ok := shardScaling(func(r *ScalingRun) float64 { return r.Sessions.OpsPerSec })(m)
	if want := 5260.0 / 1781; !ok || got != want {
		t.Errorf("3 / 1 = %v (ok %v), want %v", got, ok, want)
	}
	if cell, want := scalingRoundsCell(m), "2,130, 1,697, 1,781 / 5,167, 5,260, 5,270"; cell != want {
		t.Errorf("rounds cell %q, want %q", cell, want)
	}
}
