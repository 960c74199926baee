package diag

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// HostInfo is hostInfo's reply at now: the machine, its operating
// system, and the limits mongod lists in extra.
func HostInfo(now time.Time) bson.D {
	host, _ := os.Hostname()
	totalMB := procFileKB("/proc/meminfo", "MemTotal:") >> 10
	return bson.D{
		{Key: "system", Value: bson.D{
			{Key: "currentTime", Value: bson.NewDateTimeFromTime(now)},
			{Key: "hostname", Value: host},
			{Key: "cpuAddrSize", Value: int32(64)},
			{Key: "memSizeMB", Value: totalMB},
			{Key: "numCores", Value: int32(runtime.NumCPU())},
			{Key: "cpuArch", Value: Arch()},
		}},
		{Key: "os", Value: OSInfo(osType())},
		{Key: "extra", Value: HostExtra(totalMB)},
	}
}

// Arch is the processor architecture as mongod names it.
func Arch() string {
	if runtime.GOARCH == "amd64" {
		return "x86_64"
	}
	return runtime.GOARCH
}

func osType() string {
	if runtime.GOOS == "linux" {
		return "Linux"
	}
	return runtime.GOOS
}

// Mem is serverStatus.mem: the process's resident and virtual sizes in
// MB.
func Mem() bson.D {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return bson.D{
		{Key: "bits", Value: int32(64)},
		{Key: "resident", Value: int32(ResidentBytes() >> 20)},
		{Key: "virtual", Value: int32(virtualMB(ms.Sys))},
		{Key: "supported", Value: true},
	}
}

// ResidentBytes is the process's resident size (VmRSS) from /proc; 0
// where there is no /proc.
func ResidentBytes() int64 { return procStatusKB("VmRSS:") << 10 }

// virtualMB is the process's virtual size from /proc, or what the Go
// runtime obtained from the system where there is no /proc.
func virtualMB(runtimeSys uint64) int64 {
	if kb := procStatusKB("VmSize:"); kb > 0 {
		return kb >> 10
	}
	return int64(runtimeSys >> 20)
}

func procStatusKB(field string) int64 { return procFileKB("/proc/self/status", field) }

// procFileKB reads a "field: n kB" line of a /proc file; 0 without one.
func procFileKB(path, field string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}
