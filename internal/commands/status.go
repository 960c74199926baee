package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/diag"
	"github.com/mayflydb/mayfly/internal/server"
)

// serverStatus's sections that read the network server or /proc; the
// others come from internal/diag directly.

// serverStats returns the network server's counters, zero without one
// (in tests).
func (h *Handler) serverStats() server.Stats {
	if h.deps.ServerStats == nil {
		return server.Stats{}
	}
	return h.deps.ServerStats()
}

func (h *Handler) networkStatus() bson.D {
	s := h.serverStats()
	return diag.Network(s.BytesIn, s.BytesOut, s.Requests)
}

func (h *Handler) memoryStatus() bson.D {
	conns := h.serverStats()
	return diag.Memory(diag.MemoryHolders{
		Resident:              procStatusKB("VmRSS:") << 10,
		Storage:               h.deps.Store.Engine().Metrics(),
		Connections:           conns.Current,
		ActiveConnections:     conns.Active,
		ConnectionBufferBytes: conns.BufferBytes,
		OpenCursors:           int64(h.deps.Cursors.Open()),
	})
}

// virtualMB is the process's virtual size from /proc, or what the Go
// runtime obtained from the system where there is no /proc.
func virtualMB(runtimeSys uint64) int64 {
	if kb := procStatusKB("VmSize:"); kb > 0 {
		return kb >> 10
	}
	return int64(runtimeSys >> 20)
}
