//go:build !linux

package docstore

import "time"

// benchThreadCPU is unavailable here: benchmarks report wall time only.
func benchThreadCPU() (time.Duration, bool) { return 0, false }
