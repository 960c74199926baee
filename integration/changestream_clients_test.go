package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/app"
)

// The change stream scripts under clients/tests: everyday events and an
// expiring cart giving its items back to stock, in mongosh, the Node.js
// driver and pymongo, on a standalone server.

func TestMongoshChangeStream(t *testing.T) {
	s := startServer(t, app.Config{})
	out, _ := mongosh(t, dbURI(s, "shop"), "--file", scriptPath(t, "mongosh_changestream.js"))
	if !strings.Contains(out, "mongosh changestream ok") {
		t.Fatalf("mongosh output:\n%s", out)
	}
}

func TestNodeDriverChangeStream(t *testing.T) {
	s := startServer(t, app.Config{})
	dir := ensureNodeClients(t)
	out, _ := run(t, dir, 2*time.Minute, "node", scriptPath(t, "node_changestream.mjs"), s.uri)
	if !strings.Contains(out, "node changestream ok") {
		t.Fatalf("node output:\n%s", out)
	}
}

func TestPymongoChangeStream(t *testing.T) {
	s := startServer(t, app.Config{})
	py := ensurePymongo(t)
	out, _ := run(t, "", 2*time.Minute, py, scriptPath(t, "pymongo_changestream.py"), s.uri)
	if !strings.Contains(out, "pymongo changestream ok") {
		t.Fatalf("pymongo output:\n%s", out)
	}
}

// TestPymongoExpandedEvents: a create and a createIndexes event read by
// pymongo from a stream with showExpandedEvents.
func TestPymongoExpandedEvents(t *testing.T) {
	s := startServer(t, app.Config{})
	py := ensurePymongo(t)
	out, _ := run(t, "", 2*time.Minute, py, scriptPath(t, "pymongo_expanded_events.py"), s.uri)
	if !strings.Contains(out, "pymongo expanded events ok") {
		t.Fatalf("pymongo output:\n%s", out)
	}
}
