package bench

import (
	"context"
	"fmt"
	"slices"
)

// The previous build (-baseline-bin) is measured in rounds that alternate
// with this build's, in the order this, previous, previous, this, repeated.
// One run of each, a minute apart, moves by a third on a shared 2-core
// machine: the machine drifts more between two runs than a refactor moves
// a figure. Alternating spreads that drift over both sides, and each side's
// figure is the median of its rounds.

// BaselineRounds is every run of the phases measured on both builds, each
// marked with the build it ran on.
type BaselineRounds struct {
	// Sessions are rounds of the session workload on two servers, one of
	// each build, started and loaded together.
	Sessions []*SessionsResult `json:"sessions,omitempty"`
	// Storms and Bursts are the expiry phase on a fresh server each time.
	Storms []*ExpiryResult `json:"storms,omitempty"`
	Bursts []*ExpiryResult `json:"bursts,omitempty"`
	// ReplSets are the replica-set phase on a fresh set each time.
	ReplSets []*ReplSetResult `json:"replsets,omitempty"`
}

// baselineOrder is the build of each round, n rounds a side: true for this
// build. ABBA blocks, so that a steady drift weighs on both sides alike.
func baselineOrder(n int) []bool {
	var out []bool
	for len(out) < 2*n {
		out = append(out, true, false, false, true)
	}
	return out[:2*n]
}

// kindOf names the build of a round.
func kindOf(this bool) string {
	if this {
		return nameMayfly
	}
	return nameBaseline
}

// baselineSessionRounds runs the session workload in alternating rounds on
// servers of both builds, started and loaded together, so that the ratio
// is of runs seconds apart rather than of servers started minutes apart.
// Half the rounds run on a pair started this build first, half on a pair
// started the previous build first: in three runs side by side the server
// started first was the slower one each time, whichever build it was.
func (m *modeRun) baselineSessionRounds(ctx context.Context) ([]*SessionsResult, error) {
	var out []*SessionsResult
	for _, thisFirst := range []bool{true, false} {
		rounds, err := m.baselinePairRounds(ctx, thisFirst)
		out = append(out, rounds...)
		if err != nil {
			return out, fmt.Errorf("sessions, alternating with the previous build: %w", err)
		}
	}
	return out, nil
}

// baselinePairRounds runs BaselineRounds session rounds of each build on a
// pair of servers started this build first or the previous build first,
// the first-started one's round first.
func (m *modeRun) baselinePairRounds(ctx context.Context, thisFirst bool) ([]*SessionsResult, error) {
	first, second := nameMayfly, nameBaseline
	if !thisFirst {
		first, second = second, first
	}
	var out []*SessionsResult
	err := m.withLoadedPair(ctx, first, second, func(a, b *server) error {
		for _, firstsTurn := range baselineOrder(m.cfg.BaselineRounds) {
			s, isThis := a, firstsTurn == thisFirst
			if !firstsTurn {
				s = b
			}
			res, err := m.sessionsRun(ctx, s, targetMongo, 0)
			if err != nil {
				return err
			}
			res.Server = kindOf(isThis)
			out = append(out, res)
		}
		return nil
	})
	return out, err
}

// baselineExpiryRounds runs the storm and the burst on fresh servers of
// each build in alternating order.
func (m *modeRun) baselineExpiryRounds(ctx context.Context, r *BaselineRounds) error {
	for _, isThis := range baselineOrder(m.cfg.BaselineRounds) {
		storm, burst, err := m.expiryOn(ctx, kindOf(isThis))
		if err != nil {
			return fmt.Errorf("expiry on %s: %w", kindOf(isThis), err)
		}
		storm.Server, burst.Server = kindOf(isThis), kindOf(isThis)
		r.Storms, r.Bursts = append(r.Storms, storm), append(r.Bursts, burst)
	}
	return nil
}

// baselineReplSetRounds runs the replica-set phase on fresh sets of each
// build in alternating order.
func (m *modeRun) baselineReplSetRounds(ctx context.Context, r *BaselineRounds) error {
	for _, isThis := range baselineOrder(m.cfg.BaselineRounds) {
		res, err := m.replSetPhase(ctx, kindOf(isThis))
		if err != nil {
			return fmt.Errorf("replica set of %s: %w", kindOf(isThis), err)
		}
		res.Server = kindOf(isThis)
		r.ReplSets = append(r.ReplSets, res)
	}
	return nil
}

// sides splits rounds into the measured side's figures and the reference
// side's (the previous build's, say), dropping rounds whose figure is not
// measured (0).
func sides[T any](rounds []T, reference func(T) bool, figure func(T) float64) (this, ref []float64) {
	for _, r := range rounds {
		v := figure(r)
		if v == 0 {
			continue
		}
		if reference(r) {
			ref = append(ref, v)
		} else {
			this = append(this, v)
		}
	}
	return this, ref
}

// median is the middle of xs (the mean of the two middles for an even
// count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// roundsRatio is median(this)/median(reference) over the rounds (or its
// inverse when lower is better), with both medians and the round counts.
func roundsRatio[T any](rounds []T, reference func(T) bool, figure func(T) float64, lowerBetter bool,
	unit string) (float64, string, bool) {
	this, prev := sides(rounds, reference, figure)
	a, b := median(this), median(prev)
	if a == 0 || b == 0 {
		return 0, "", false
	}
	note := fmt.Sprintf("median of %d rounds %s%s now, of %d %s%s before", len(this), fmtFigure(a), unit,
		len(prev), fmtFigure(b), unit)
	if lowerBetter {
		return b / a, note, true
	}
	return a / b, note, true
}

func fmtFigure(v float64) string {
	if v < 1000 {
		return fmtMs(v)
	}
	return fmtN(v)
}

func sessionsOnBaseline(r *SessionsResult) bool { return r.Server == nameBaseline }
func expiryOnBaseline(r *ExpiryResult) bool     { return r.Server == nameBaseline }
func replSetOnBaseline(r *ReplSetResult) bool   { return r.Server == nameBaseline }

// firstOf is this build's first round, or the zero value.
func firstOf[T any](rounds []T, onBaseline func(T) bool) T {
	for _, r := range rounds {
		if !onBaseline(r) {
			return r
		}
	}
	var none T
	return none
}
