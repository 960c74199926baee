package app

import (
	"fmt"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/params"
	"github.com/mayflydb/mayfly/internal/session"
)

// params registers the server parameters Mayfly has beyond the defaults.
func (a *App) params() *params.Table {
	p := params.New()
	p.Register("logicalSessionTimeoutMinutes", params.Fixed(int32(session.TimeoutMinutes)))
	p.Register("ttlMonitorEnabled", params.Bool(a.monitor.Enabled, a.monitor.SetEnabled))
	p.Register("transactionLifetimeLimitSeconds", params.Int(
		func() int64 { return int64(a.txns.Lifetime() / time.Second) },
		func(n int64) { a.txns.SetLifetime(time.Duration(n) * time.Second) }, 1))
	p.Register("minSnapshotHistoryWindowInSeconds", params.Int(
		func() int64 { return int64(a.snapshots.Window() / time.Second) },
		func(n int64) { a.snapshots.SetWindow(time.Duration(n) * time.Second) }, 0))
	p.Register("ttlMonitorSleepSecs", params.Int(a.monitor.SleepSecs, a.monitor.SetSleepSecs, 1))
	a.registerMigrationParams(p)
	// mayflyExactExpiry hides expired documents from every command before
	// the monitor deletes them; false restores MongoDB's lag.
	p.Register("mayflyExactExpiry", params.Bool(a.store.ExactExpiry, a.store.SetExactExpiry))
	// mayflyTTLDeletePace is the share of the server's CPU time the TTL monitor may use
	// while clients have requests in flight.
	p.Register("mayflyTTLDeletePace", params.Float(a.monitor.Pace, a.monitor.SetPace, 0.01, 1))
	// mayflyTTLCatchUpAfterMS is how late (milliseconds) the monitor's
	// oldest document may be before it stops pacing to catch up with a
	// storm it can outrun; -1 never.
	p.Register("mayflyTTLCatchUpAfterMS", params.Int(
		func() int64 { return max(int64(a.monitor.CatchUpAfter()/time.Millisecond), -1) },
		func(n int64) { a.monitor.SetCatchUpAfter(time.Duration(n) * time.Millisecond) }, -1))
	if tc, ok := a.cfg.Clock.(*clock.Offset); ok {
		// mayflyClockOffsetSeconds (enableTestCommands only) moves the
		// server's clock ahead, for an application's tests of expiry.
		p.Register("mayflyClockOffsetSeconds", params.Int(
			func() int64 { return int64(tc.Get() / time.Second) },
			func(n int64) { tc.Set(time.Duration(n) * time.Second); a.monitor.Kick() }, 0))
	} else {
		p.Absent("mayflyClockOffsetSeconds", "--setParameter enableTestCommands=1 at start")
	}
	return p
}

// testCommands reports whether --setParameter enableTestCommands=1 was
// given: commands that inject faults answer only then, as on mongod.
func testCommands(values map[string]string) bool {
	v := values["enableTestCommands"]
	return v == "1" || v == "true"
}

// applySetParameters applies --setParameter name=value pairs at start.
func applySetParameters(p *params.Table, values map[string]string) error {
	for name, raw := range values {
		if name == "enableTestCommands" {
			continue // read at start by testCommands
		}
		if err := p.SetFromString(name, raw); err != nil {
			return fmt.Errorf("app: --setParameter %s=%s: %w", name, raw, err)
		}
	}
	return nil
}
