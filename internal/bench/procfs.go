package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is USER_HZ, the unit of utime and stime in /proc/<pid>/stat;
// 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// cpuTime returns the user plus system CPU time that process pid has used
// (all its threads), from /proc/<pid>/stat.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu time of %d: %w", pid, err)
	}
	// The command name is in parentheses and may hold spaces; the fields
	// counted from the closing parenthesis are fixed.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu time of %d: malformed stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// After ")": state(3) ... utime is field 14 and stime 15 of the file,
	// so indexes 11 and 12 here.
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu time of %d: short stat", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpu time of %d: bad utime/stime %q %q", pid, f[11], f[12])
	}
	return time.Duration(u+s) * clockTick, nil
}

// quietWindow and quietCPU define a quiet process: one that used less
// than quietCPU of CPU time over a window (its flushes and compactions
// over, with a tick's margin for the timers of an idle server).
const (
	quietWindow  = 2 * time.Second
	quietCPU     = 60 * time.Millisecond
	maxQuietWait = time.Minute
)

// waitQuiet waits until process pid is quiet, or limit has passed, and
// returns how long it waited (at most about limit): a server's memory is read once the work its
// load left behind is done, not while a flush holds buffers it will let
// go (how long that takes depends on the cores it has, not the build).
func waitQuiet(ctx context.Context, pid int, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for time.Since(start) < limit {
		before, err := cpuTime(pid)
		if err != nil {
			return 0, err
		}
		if err := sleepUntil(ctx, time.Now().Add(quietWindow)); err != nil {
			return 0, err
		}
		after, err := cpuTime(pid)
		if err != nil {
			return 0, err
		}
		if after-before < quietCPU {
			break
		}
	}
	return time.Since(start), nil
}

// rssBytes returns VmRSS of process pid from /proc/<pid>/status.
func rssBytes(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("rss of %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("rss of %d: %w", pid, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("rss of %d: %w", pid, err)
	}
	return 0, fmt.Errorf("rss of %d: no VmRSS line", pid)
}

// waitIdle waits until process pid uses less than a tenth of a CPU over a
// quarter second (say, once the storage engine has finished compacting
// what a preload wrote), or until limit passes. It returns how long it
// waited.
func waitIdle(ctx context.Context, pid int, limit time.Duration) (time.Duration, error) {
	const step = 250 * time.Millisecond
	start := time.Now()
	prev, err := cpuTime(pid)
	if err != nil {
		return 0, err
	}
	for time.Since(start) < limit {
		if err := sleepUntil(ctx, time.Now().Add(step)); err != nil {
			return time.Since(start), err
		}
		cur, err := cpuTime(pid)
		if err != nil {
			return time.Since(start), err
		}
		if cur-prev < step/10 {
			break
		}
		prev = cur
	}
	return time.Since(start), nil
}

// schedTimes sums over the threads of process pid the time they ran on a
// CPU and the time they waited, runnable, for one
// (/proc/<pid>/task/*/schedstat): how much of the machine the process got,
// and how much more it wanted while others held the cores.
func schedTimes(pid int) (run, wait time.Duration, err error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("threads of %d: %w", pid, err)
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		r, err1 := strconv.ParseInt(f[0], 10, 64)
		w, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("schedstat of %d/%s: %q", pid, t.Name(), b)
		}
		run += time.Duration(r)
		wait += time.Duration(w)
	}
	return run, wait, nil
}
