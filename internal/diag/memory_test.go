package diag

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/storage"
)

// mayflyMemory adds up: the resident figure is the Go runtime's resident
// part, the storage engine's memory outside the Go heap and what is
// unaccounted; the Go runtime's parts add up to its resident part.
func TestMemoryAddsUp(t *testing.T) {
	const resident = 512 << 20
	doc := Memory(MemoryHolders{
		Resident: resident,
		Storage:  storage.Metrics{BlockCacheBytes: 3 << 20, MemTableBytes: 1 << 20},
	})
	raw, err := bson.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
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
	}
	if err := bson.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Resident != resident || m.GoHeap.Objects <= 0 || m.Storage.OutsideGoHeap != StorageOffGoHeap {
		t.Fatalf("mayflyMemory %+v", m)
	}
	g := m.GoHeap
	if sum := g.Objects + g.Unused + g.Free + g.Stacks + g.RuntimeOther; sum != g.Resident {
		t.Fatalf("Go runtime parts add up to %d, its resident figure is %d", sum, g.Resident)
	}
	outside := int64(0)
	if StorageOffGoHeap {
		outside = m.Storage.BlockCache + m.Storage.MemTables
	}
	if sum := g.Resident + outside + m.Unaccounted; sum != m.Resident {
		t.Fatalf("parts add up to %d, resident is %d", sum, m.Resident)
	}
}
