package diag

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/logring"
)

// LogLines is getLog's answer for the log named which ("global" or
// "startupWarnings"); empty without a ring.
func LogLines(ring *logring.Ring, which string) bson.D {
	lines := bson.A{}
	var total int64
	if ring != nil {
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

// Network is serverStatus.network. Bytes count as they cross the socket:
// compressed messages count at their compressed size in both the logical
// and the physical figures.
func Network(bytesIn, bytesOut, requests int64) bson.D {
	return bson.D{
		{Key: "bytesIn", Value: bytesIn},
		{Key: "bytesOut", Value: bytesOut},
		{Key: "physicalBytesIn", Value: bytesIn},
		{Key: "physicalBytesOut", Value: bytesOut},
		{Key: "numSlowDNSOperations", Value: int64(0)},
		{Key: "numSlowSSLOperations", Value: int64(0)},
		{Key: "numRequests", Value: requests},
	}
}

// ExtraInfo is serverStatus.extra_info, from getrusage as on mongod.
func ExtraInfo() bson.D {
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

// maxRSSKB converts getrusage's ru_maxrss, which Linux gives in kilobytes
// and macOS in bytes.
func maxRSSKB(v int64) int64 {
	if runtime.GOOS == "darwin" {
		return v >> 10
	}
	return v
}

// OSInfo is hostInfo.os: the distribution's name and version from
// /etc/os-release where there is one; osType is the type mongod names.
func OSInfo(osType string) bson.D {
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
	return bson.D{{Key: "type", Value: osType}, {Key: "name", Value: name}, {Key: "version", Value: version}}
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

// HostExtra is hostInfo.extra, for a machine of totalMemoryMB.
func HostExtra(totalMemoryMB int64) bson.D {
	out := bson.D{
		{Key: "kernelVersion", Value: kernelRelease()},
		{Key: "pageSize", Value: int64(os.Getpagesize())},
		{Key: "numPages", Value: totalMemoryMB << 20 / int64(os.Getpagesize())},
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		out = append(out, bson.E{Key: "maxOpenFiles", Value: int64(lim.Cur)})
	}
	return out
}

// ProcessHeader is serverStatus's first fields: the host, the version,
// the process kind ("mayfly", "mongos"), its pid, how long it has run
// since started, and the time at now.
func ProcessHeader(version, process string, started, now time.Time) bson.D {
	host, _ := os.Hostname()
	uptime := now.Sub(started)
	return bson.D{
		{Key: "host", Value: host},
		{Key: "version", Value: version},
		{Key: "process", Value: process},
		{Key: "pid", Value: int64(os.Getpid())},
		{Key: "uptime", Value: float64(uptime / time.Second)},
		{Key: "uptimeMillis", Value: uptime.Milliseconds()},
		{Key: "uptimeEstimate", Value: int64(uptime / time.Second)},
		{Key: "localTime", Value: bson.NewDateTimeFromTime(now)},
	}
}
