package commands

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestSnapshotReadCommands runs every command of the table with read
// concern snapshot: exactly mongod's snapshot readers are let through,
// every other is refused with mongod's InvalidOptions text.
func TestSnapshotReadCommands(t *testing.T) {
	h, _ := newTestHandler(t)
	rc := bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: bson.Timestamp{T: 7, I: 2}}}
	for name := range h.table {
		err := refuseSnapshotRead(name, rc)
		if slices.Contains(snapshotReadCommands, name) {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		want := "Command " + name + ` does not support { readConcern: { level: "snapshot", atClusterTime: Timestamp(7, 2), provenance: "clientSupplied" } } :: caused by :: read concern not supported`
		if e := mongoerr.As(err); e == nil || e.Code != mongoerr.InvalidOptions || e.Msg != want {
			t.Errorf("%s: %v, want InvalidOptions %q", name, err, want)
		}
	}
	for _, name := range snapshotReadCommands {
		if _, ok := h.table[name]; !ok {
			t.Errorf("%s is no command of the table", name)
		}
	}
}
