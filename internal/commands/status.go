package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/diag"
	"github.com/mayflydb/mayfly/internal/server"
)

// serverStatus's sections that read the network server; the others
// come from internal/diag directly.

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
		Resident:              diag.ResidentBytes(),
		Storage:               h.deps.Store.Engine().Metrics(),
		Connections:           conns.Current,
		ActiveConnections:     conns.Active,
		ConnectionBufferBytes: conns.BufferBytes,
		OpenCursors:           int64(h.deps.Cursors.Open()),
	})
}
