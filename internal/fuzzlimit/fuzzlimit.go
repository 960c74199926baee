// Package fuzzlimit bounds the work a fuzz target spends on one input.
//
// Without a bound, an input that takes seconds only shows as a fuzzer
// stalled at 0 execs/s, and if the -fuzztime deadline falls inside it the
// run fails with a bare "context deadline exceeded" and no input written.
// With it, a slow input fails the target like a crash: the fuzzer writes
// it to testdata/fuzz and minimizes it, and `go test -run` replays it.
package fuzzlimit

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// DefaultLimit is the CPU time one input may use. The limit counts CPU
// time, not wall time, because CI runs on 2 cores that other jobs share:
// at a load of 20 an input waits ten times longer than it works, and a
// wall-clock limit would fail at random. Every input of every target uses
// well under 10 ms when it is fine, and the largest legal outputs (a
// 16 MiB document or string) under 200 ms even with the fuzzer's coverage
// instrumentation, so 1 s still catches any super-linear cost long before
// Go's own 10 s hang detector, which kills the worker instead of
// minimizing the input.
const DefaultLimit = time.Second

// EnvLimit names the environment variable that overrides DefaultLimit,
// as a Go duration: a lower value hunts for slow inputs in a long run.
const EnvLimit = "MAYFLY_FUZZ_INPUT_LIMIT"

// maxQuoted caps how much of each input a failure message repeats; the
// whole input is in the file the fuzzer writes.
const maxQuoted = 1 << 10

// Budget is a per-input limit on the time Spent reports.
type Budget struct {
	Limit time.Duration
	// Spent returns a running total of the resource measured, such as the
	// process's CPU time.
	Spent func() time.Duration
}

// FromEnv returns the limit of EnvLimit if it is set and valid, else
// DefaultLimit, on the process's CPU time.
func FromEnv() Budget {
	b := Budget{Limit: DefaultLimit, Spent: ProcessCPU}
	if d, err := time.ParseDuration(os.Getenv(EnvLimit)); err == nil && d > 0 {
		b.Limit = d
	}
	return b
}

// ProcessCPU returns the user and system CPU time of the whole process. A
// fuzz worker runs one input at a time, so what it uses while the input
// runs (the garbage collector included) is that input's cost.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Failer is the part of testing.TB that Run reports through.
type Failer interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Run runs body, which tests one input, on the calling goroutine, and fails
// t with the input if body spent more than the limit. Body runs to the end
// (Go cannot stop it from outside), so an input that never ends is still
// left to the fuzzer's own hang detector.
func (b Budget) Run(t Failer, body func(), input ...any) {
	t.Helper()
	start := b.Spent()
	body()
	if spent := b.Spent() - start; spent > b.Limit {
		t.Fatalf("slow input: spent %v, limit %v (%s): %s", spent, b.Limit, EnvLimit, quote(input))
	}
}

// Run runs body under FromEnv's budget.
func Run(t Failer, body func(), input ...any) {
	t.Helper()
	FromEnv().Run(t, body, input...)
}

func quote(input []any) string {
	parts := make([]string, len(input))
	for i, v := range input {
		q := fmt.Sprintf("%#v", v)
		if len(q) > maxQuoted {
			q = fmt.Sprintf("%s... (%d more bytes)", q[:maxQuoted], len(q)-maxQuoted)
		}
		parts[i] = q
	}
	return strings.Join(parts, ", ")
}
