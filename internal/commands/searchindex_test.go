package commands

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestSearchIndexCommandsRefused: every search index command of the table
// (mongod has four) answers SearchNotEnabled naming Atlas, as a mongod
// with no search index management host does.
func TestSearchIndexCommandsRefused(t *testing.T) {
	h, c := newTestHandler(t)
	found := 0
	for name := range h.table {
		if !strings.Contains(name, "SearchIndex") {
			continue
		}
		found++
		reply := runOn(h, c, "test", bson.D{{Key: name, Value: "coll"}, {Key: "name", Value: "x"}})
		if code := replyCode(reply); code != int32(mongoerr.SearchNotEnabled) {
			t.Errorf("%s: code %d, want SearchNotEnabled (%v)", name, code, reply)
		}
		if msg := errmsgOf(reply); !strings.HasPrefix(msg, "Using Atlas Search Database Commands and the $listSearchIndexes aggregation stage requires additional configuration.") {
			t.Errorf("%s: errmsg %q", name, msg)
		}
	}
	if found != 4 {
		t.Errorf("%d search index commands in the table, want mongod's 4 (create, drop, update, list)", found)
	}
}
