package migrate

import (
	"fmt"
	"time"

	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// InWindow reports whether now falls in the balancer's active window
// (config.settings' activeWindow {start, stop}, "HH:MM" in the config
// server's local time). A window whose stop is before its start spans
// midnight; no window means always. A malformed window is an error, as
// mongod's balancer refuses to run on one.
func InWindow(w *shardmeta.ActiveWindow, now time.Time) (bool, error) {
	if w == nil {
		return true, nil
	}
	start, err := minuteOfDay(w.Start)
	if err != nil {
		return false, err
	}
	stop, err := minuteOfDay(w.Stop)
	if err != nil {
		return false, err
	}
	m := now.Hour()*60 + now.Minute()
	if start <= stop {
		return start <= m && m < stop, nil
	}
	return m >= start || m < stop, nil
}

func minuteOfDay(s string) (int, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, fmt.Errorf("migrate: activeWindow time %q is not HH:MM: %w", s, err)
	}
	return t.Hour()*60 + t.Minute(), nil
}
