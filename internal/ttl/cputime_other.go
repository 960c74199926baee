//go:build !linux

package ttl

import "time"

// threadCPU is unavailable here; the monitor paces by wall time instead.
func threadCPU() (time.Duration, bool) { return 0, false }
