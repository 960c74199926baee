package commands

import (
	"os"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/opstats"
)

// serverStatus sections beyond the basics, with the fields mongostat and
// the monitoring agents read.

func (h *Handler) logLines(which string) bson.D {
	lines := bson.A{}
	var total int64
	if ring := h.deps.Log; ring != nil {
		var kept []string
		if which == "startupWarnings" {
			kept = ring.StartupWarnings()
			total = int64(len(kept))
		} else {
			kept, total = ring.Global()
		}
		for _, l := range kept {
			lines = append(lines, l)
		}
	}
	return bson.D{{Key: "totalLinesWritten", Value: int32(total)}, {Key: "log", Value: lines}}
}

func (h *Handler) assertsStatus() bson.D {
	a := h.deps.OpStats.Asserts()
	return bson.D{
		{Key: "regular", Value: int32(a.Regular)},
		{Key: "warning", Value: int32(a.Warning)},
		{Key: "msg", Value: int32(a.Msg)},
		{Key: "user", Value: int32(a.User)},
		{Key: "tripwire", Value: int32(a.Tripwire)},
		{Key: "rollovers", Value: int32(0)},
	}
}

// globalLockStatus: Mayfly has no global lock, so totalTime is the
// uptime, the queue holds the writers waiting for an fsync lock, and the
// active clients are the reads and writes running now.
func (h *Handler) globalLockStatus(uptime time.Duration) bson.D {
	queued := h.deps.Fsync.Waiting()
	readers := h.deps.OpStats.Active(opstats.Reads)
	writers := h.deps.OpStats.Active(opstats.Writes)
	return bson.D{
		{Key: "totalTime", Value: uptime.Microseconds()},
		{Key: "currentQueue", Value: bson.D{
			{Key: "total", Value: int32(queued)}, {Key: "readers", Value: int32(0)}, {Key: "writers", Value: int32(queued)},
		}},
		{Key: "activeClients", Value: bson.D{
			{Key: "total", Value: int32(readers + writers)}, {Key: "readers", Value: int32(readers)}, {Key: "writers", Value: int32(writers)},
		}},
	}
}

// networkStatus counts bytes as they cross the socket: compressed
// messages count at their compressed size in both the logical and the
// physical figures.
func (h *Handler) networkStatus() bson.D {
	s := h.serverStats()
	in, out, requests := s.BytesIn, s.BytesOut, s.Requests
	return bson.D{
		{Key: "bytesIn", Value: in},
		{Key: "bytesOut", Value: out},
		{Key: "physicalBytesIn", Value: in},
		{Key: "physicalBytesOut", Value: out},
		{Key: "numSlowDNSOperations", Value: int64(0)},
		{Key: "numSlowSSLOperations", Value: int64(0)},
		{Key: "numRequests", Value: requests},
	}
}

func (h *Handler) opLatencies() bson.D {
	class := func(c opstats.Class) bson.D {
		t := h.deps.OpStats.Class(c)
		return bson.D{{Key: "latency", Value: t.Time.Microseconds()}, {Key: "ops", Value: t.Count}}
	}
	return bson.D{
		{Key: "reads", Value: class(opstats.Reads)},
		{Key: "writes", Value: class(opstats.Writes)},
		{Key: "commands", Value: class(opstats.Commands)},
		{Key: "transactions", Value: bson.D{{Key: "latency", Value: int64(0)}, {Key: "ops", Value: int64(0)}}},
	}
}

// virtualMB is the process's virtual size from /proc, or what the Go
// runtime obtained from the system where there is no /proc.
func virtualMB(runtimeSys uint64) int64 {
	if kb := procStatusKB("VmSize:"); kb > 0 {
		return kb >> 10
	}
	return int64(runtimeSys >> 20)
}

// extraInfo is serverStatus.extra_info, from getrusage as on mongod.
func extraInfo() bson.D {
	out := bson.D{{Key: "note", Value: "fields vary by platform"}}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return out
	}
	return append(out,
		bson.E{Key: "user_time_us", Value: ru.Utime.Nano() / 1000},
		bson.E{Key: "system_time_us", Value: ru.Stime.Nano() / 1000},
		bson.E{Key: "maximum_resident_set_kb", Value: maxRSSKB(int64(ru.Maxrss))},
		bson.E{Key: "input_blocks", Value: int64(ru.Inblock)},
		bson.E{Key: "output_blocks", Value: int64(ru.Oublock)},
		bson.E{Key: "page_reclaims", Value: int64(ru.Minflt)},
		bson.E{Key: "page_faults", Value: int64(ru.Majflt)},
		bson.E{Key: "voluntary_context_switches", Value: int64(ru.Nvcsw)},
		bson.E{Key: "involuntary_context_switches", Value: int64(ru.Nivcsw)},
	)
}

// osInfo is hostInfo.os: the distribution's name and version from
// /etc/os-release where there is one.
func osInfo() bson.D {
	name, version := runtime.GOOS, ""
	if data, err := os.ReadFile("/etc/os-release"); err == nil {
		fields := osRelease(string(data))
		if v := fields["PRETTY_NAME"]; v != "" {
			name = v
		} else if v := fields["NAME"]; v != "" {
			name = v
		}
		version = fields["VERSION_ID"]
	}
	if version == "" {
		version = kernelRelease()
	}
	return bson.D{{Key: "type", Value: osType()}, {Key: "name", Value: name}, {Key: "version", Value: version}}
}

func osRelease(data string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(data, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok {
			out[k] = strings.Trim(v, `"'`)
		}
	}
	return out
}

func kernelRelease() string {
	data, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// hostExtra is hostInfo.extra.
func hostExtra() bson.D {
	out := bson.D{
		{Key: "kernelVersion", Value: kernelRelease()},
		{Key: "pageSize", Value: int64(os.Getpagesize())},
		{Key: "numPages", Value: totalMemoryMB() << 20 / int64(os.Getpagesize())},
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		out = append(out, bson.E{Key: "maxOpenFiles", Value: int64(lim.Cur)})
	}
	return out
}

// maxRSSKB converts getrusage's ru_maxrss, which Linux gives in kilobytes
// and macOS in bytes.
func maxRSSKB(v int64) int64 {
	if runtime.GOOS == "darwin" {
		return v >> 10
	}
	return v
}

// commandMetrics is serverStatus.metrics.commands: per command run, how
// many ran and how many failed, in name order.
func (h *Handler) commandMetrics() bson.D {
	all := h.deps.OpStats.Commands()
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	sort.Strings(names)
	out := bson.D{}
	for _, name := range names {
		c := all[name]
		out = append(out, bson.E{Key: name, Value: bson.D{
			{Key: "failed", Value: c.Failed}, {Key: "total", Value: int64(c.Latency.Total)},
		}})
	}
	return out
}
