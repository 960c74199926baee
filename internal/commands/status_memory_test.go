package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// serverStatus.mayflyMemory adds up: the resident figure is the Go
// runtime's resident part, the storage engine's memory outside the Go heap
// and what is unaccounted; the Go runtime's parts add up to its resident
// part.
func TestServerStatusMemoryAddsUp(t *testing.T) {
	h, c := newTestHandler(t)
	reply := runOn(h, c, "admin", bson.D{{Key: "serverStatus", Value: 1}})
	raw, err := bson.Marshal(reply)
	if err != nil {
		t.Fatal(err)
	}
	var status struct {
		Memory struct {
			Resident int64 `bson:"resident"`
			Storage  struct {
				BlockCache    int64 `bson:"blockCacheBytes"`
				MemTables     int64 `bson:"memTableBytes"`
				OutsideGoHeap bool  `bson:"outsideGoHeap"`
			} `bson:"storage"`
			GoHeap struct {
				Resident     int64 `bson:"resident"`
				Objects      int64 `bson:"objects"`
				Unused       int64 `bson:"unused"`
				Free         int64 `bson:"free"`
				Stacks       int64 `bson:"stacks"`
				RuntimeOther int64 `bson:"runtimeOther"`
			} `bson:"goHeap"`
			Unaccounted int64 `bson:"unaccounted"`
		} `bson:"mayflyMemory"`
	}
	if err := bson.Unmarshal(raw, &status); err != nil {
		t.Fatal(err)
	}
	m := status.Memory
	if m.Resident <= 0 || m.GoHeap.Objects <= 0 || m.Storage.OutsideGoHeap != storageOffGoHeap {
		t.Fatalf("mayflyMemory %+v", m)
	}
	g := m.GoHeap
	if sum := g.Objects + g.Unused + g.Free + g.Stacks + g.RuntimeOther; sum != g.Resident {
		t.Fatalf("Go runtime parts add up to %d, its resident figure is %d", sum, g.Resident)
	}
	outside := int64(0)
	if storageOffGoHeap {
		outside = m.Storage.BlockCache + m.Storage.MemTables
	}
	if sum := g.Resident + outside + m.Unaccounted; sum != m.Resident {
		t.Fatalf("parts add up to %d, resident is %d", sum, m.Resident)
	}
}
