package fuzzlimit

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// meter is a Spent source that moves only when told to.
type meter struct{ spent time.Duration }

func (m *meter) Spent() time.Duration { return m.spent }

// recorder is a Failer that keeps the failure instead of stopping.
type recorder struct{ msg string }

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}

func TestRunFailsOnlyPastTheLimit(t *testing.T) {
	for _, tc := range []struct {
		took time.Duration
		fail bool
	}{
		{0, false},
		{time.Second, false},
		{2 * time.Second, false},
		{2*time.Second + time.Nanosecond, true},
		{time.Minute, true},
	} {
		m := &meter{spent: time.Hour}
		b := Budget{Limit: 2 * time.Second, Spent: m.Spent}
		r := &recorder{}
		ran := false
		b.Run(r, func() { ran = true; m.spent += tc.took }, "doc", int8(3))
		if !ran {
			t.Fatalf("%v: body did not run", tc.took)
		}
		if got := r.msg != ""; got != tc.fail {
			t.Fatalf("%v: failed %v, want %v (%q)", tc.took, got, tc.fail, r.msg)
		}
		if tc.fail && !strings.Contains(r.msg, `"doc", 3`) {
			t.Fatalf("%v: message does not name the input: %q", tc.took, r.msg)
		}
	}
}

func TestFailureQuotesAtMostABoundedInput(t *testing.T) {
	m := &meter{}
	r := &recorder{}
	Budget{Limit: time.Millisecond, Spent: m.Spent}.Run(r, func() { m.spent += time.Second }, strings.Repeat("x", 1<<20))
	if len(r.msg) > 2*maxQuoted {
		t.Fatalf("message of %d bytes for a 1 MiB input", len(r.msg))
	}
	if !strings.Contains(r.msg, "more bytes") {
		t.Fatalf("truncation not said: %q", r.msg[len(r.msg)-100:])
	}
}

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want time.Duration
	}{
		{"", DefaultLimit},
		{"50ms", 50 * time.Millisecond},
		{"nonsense", DefaultLimit},
		{"-1s", DefaultLimit},
	} {
		t.Setenv(EnvLimit, tc.env)
		if got := FromEnv().Limit; got != tc.want {
			t.Fatalf("%s=%q: limit %v, want %v", EnvLimit, tc.env, got, tc.want)
		}
	}
}

// TestProcessCPUCountsWorkNotWaiting checks the meter FromEnv uses: a
// sleep costs (almost) nothing, a busy loop costs about its length.
func TestProcessCPUCountsWorkNotWaiting(t *testing.T) {
	before := ProcessCPU()
	time.Sleep(200 * time.Millisecond)
	if slept := ProcessCPU() - before; slept > 100*time.Millisecond {
		t.Fatalf("a 200 ms sleep cost %v of CPU", slept)
	}
	// Busy for 50 ms of CPU; a minute of wall time allows for any load.
	before, deadline := ProcessCPU(), time.Now().Add(time.Minute)
	for ProcessCPU()-before < 50*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("a minute of busy looping cost only %v of CPU", ProcessCPU()-before)
		}
	}
}
