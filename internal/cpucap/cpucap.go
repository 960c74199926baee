// Package cpucap runs processes in CPU-capped control groups, so that a
// benchmark shows scaling, or a slower core, on one machine by giving each
// process a fixed share of a core rather than by timing. Version 1
// hierarchies cap with cpu.cfs_quota_us over cpu.cfs_period_us; version 2
// with cpu.max.
package cpucap

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Group is a CPU-capped control group that a process runs in.
type Group struct {
	dir string
	v2  bool
}

// cgroup roots looked for, v1's cpu controller first.
const (
	cgroupV1CPU = "/sys/fs/cgroup/cpu"
	cgroupV2    = "/sys/fs/cgroup"
)

// DefaultPeriodUs is the kernel's default accounting period, in
// microseconds, that a quota is a share of.
const DefaultPeriodUs = 100_000

// New makes a group named name capped at cores of one CPU, its quota
// counted over periods of periodUs microseconds.
func New(name string, cores float64, periodUs int) (*Group, error) {
	g, err := makeGroup(name)
	if err != nil {
		return nil, err
	}
	quota := int(cores * float64(periodUs))
	if g.v2 {
		err = g.write("cpu.max", fmt.Sprintf("%d %d", quota, periodUs))
	} else {
		err = errors.Join(g.write("cpu.cfs_period_us", strconv.Itoa(periodUs)),
			g.write("cpu.cfs_quota_us", strconv.Itoa(quota)))
	}
	if err != nil {
		_ = g.Remove()
		return nil, fmt.Errorf("cap cgroup %s at %.2f core: %w", g.dir, cores, err)
	}
	return g, nil
}

func makeGroup(name string) (*Group, error) {
	if fi, err := os.Stat(filepath.Join(cgroupV1CPU, "cpu.cfs_quota_us")); err == nil && !fi.IsDir() {
		dir := filepath.Join(cgroupV1CPU, name)
		return &Group{dir: dir}, os.MkdirAll(dir, 0o755)
	}
	if _, err := os.Stat(filepath.Join(cgroupV2, "cgroup.controllers")); err == nil {
		dir := filepath.Join(cgroupV2, name)
		return &Group{dir: dir, v2: true}, os.MkdirAll(dir, 0o755)
	}
	return nil, errors.New("no cgroup cpu controller (v1 " + cgroupV1CPU + " or v2 " + cgroupV2 + ")")
}

func (g *Group) write(file, value string) error {
	return os.WriteFile(filepath.Join(g.dir, file), []byte(value), 0o644)
}

// Wrap makes argv start inside the group: a shell writes its own pid into
// the group and then execs argv, so the server never runs uncapped and
// keeps the shell's pid.
func (g *Group) Wrap(argv []string, env ...string) []string {
	script := `echo $$ > "$0" && exec env "$@"`
	out := []string{"sh", "-c", script, filepath.Join(g.dir, "cgroup.procs")}
	out = append(out, env...)
	return append(out, argv...)
}

// Throttling is what the cap did to a group over a span: periods in which
// it ran out of quota, and the time it waited for the next.
type Throttling struct {
	Periods        int64   `json:"periods"`
	Throttled      int64   `json:"throttled"`
	ThrottledMs    float64 `json:"throttled_ms"`
	ThrottledShare float64 `json:"throttled_share"` // throttled / periods
}

// Stat reads the group's cpu.stat counters.
func (g *Group) Stat() (Throttling, error) {
	f, err := os.Open(filepath.Join(g.dir, "cpu.stat"))
	if err != nil {
		return Throttling{}, err
	}
	defer f.Close()
	var t Throttling
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "nr_periods":
			t.Periods = n
		case "nr_throttled":
			t.Throttled = n
		case "throttled_time": // v1, nanoseconds
			t.ThrottledMs = float64(n) / 1e6
		case "throttled_usec": // v2
			t.ThrottledMs = float64(n) / 1e3
		}
	}
	return t, sc.Err()
}

// Since is the throttling between an earlier reading and this one.
func (t Throttling) Since(before Throttling) Throttling {
	d := Throttling{Periods: t.Periods - before.Periods, Throttled: t.Throttled - before.Throttled,
		ThrottledMs: t.ThrottledMs - before.ThrottledMs}
	if d.Periods > 0 {
		d.ThrottledShare = float64(d.Throttled) / float64(d.Periods)
	}
	return d
}

// Remove deletes the group once its processes have exited.
func (g *Group) Remove() error {
	return os.Remove(g.dir)
}
