package diag

import (
	"runtime/metrics"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/storage"
)

// MemoryHolders are the figures of the memory's holders outside the Go
// runtime that serverStatus.mayflyMemory reports beside it.
type MemoryHolders struct {
	Resident                           int64 // the process's resident bytes (VmRSS)
	Storage                            storage.Metrics
	Connections, ActiveConnections     int64
	ConnectionBufferBytes, OpenCursors int64
}

// The runtime/metrics samples Memory reads, in the order of goMemory's
// fields.
var goMemorySamples = [...]string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/total:bytes",
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
}

// goMemory is the Go runtime's own account of the memory it maps.
type goMemory struct {
	heapObjects, heapUnused, heapFree, heapReleased int64
	stacks, osStacks, total, live, goal             int64
}

func readGoMemory() goMemory {
	samples := make([]metrics.Sample, len(goMemorySamples))
	for i, name := range goMemorySamples {
		samples[i].Name = name
	}
	metrics.Read(samples)
	v := make([]int64, len(samples))
	for i, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			v[i] = int64(s.Value.Uint64())
		}
	}
	return goMemory{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]}
}

// resident is what of the runtime's mappings is in memory: all but the
// pages it has given back to the system.
func (g goMemory) resident() int64 { return g.total - g.heapReleased }

// GoResident is what of the Go runtime's own mappings is in memory: the
// part of ResidentBytes the runtime accounts for.
func GoResident() int64 { return readGoMemory().resident() }

// Memory is serverStatus.mayflyMemory: where the resident memory goes, in
// bytes, so that growth can be traced to its holder. The storage engine's
// block cache and memtables are allocated outside the Go heap when the
// binary is built with cgo, inside it otherwise; unaccounted is what
// neither explains (the binary's code, C allocations, the kernel's
// rounding).
func Memory(m MemoryHolders) bson.D {
	g := readGoMemory()
	offHeap := int64(0)
	if StorageOffGoHeap {
		offHeap = m.Storage.MemTableBytes + m.Storage.BlockCacheBytes
	}
	return bson.D{
		{Key: "resident", Value: m.Resident},
		{Key: "connections", Value: bson.D{{Key: "current", Value: m.Connections}, {Key: "active", Value: m.ActiveConnections}, {Key: "bufferBytes", Value: m.ConnectionBufferBytes}}},
		{Key: "cursors", Value: bson.D{{Key: "open", Value: m.OpenCursors}}},
		{Key: "storage", Value: bson.D{
			{Key: "blockCacheBytes", Value: m.Storage.BlockCacheBytes},
			{Key: "memTableBytes", Value: m.Storage.MemTableBytes},
			{Key: "residentCacheBytes", Value: m.Storage.ResidentBytes},
			{Key: "outsideGoHeap", Value: StorageOffGoHeap},
		}},
		{Key: "goHeap", Value: bson.D{
			{Key: "resident", Value: g.resident()},
			{Key: "objects", Value: g.heapObjects},
			{Key: "live", Value: g.live},
			{Key: "goal", Value: g.goal},
			{Key: "unused", Value: g.heapUnused},
			{Key: "free", Value: g.heapFree},
			{Key: "released", Value: g.heapReleased},
			{Key: "stacks", Value: g.stacks + g.osStacks},
			{Key: "runtimeOther", Value: g.total - g.heapObjects - g.heapUnused - g.heapFree - g.heapReleased - g.stacks - g.osStacks},
		}},
		{Key: "unaccounted", Value: m.Resident - g.resident() - offHeap},
	}
}
