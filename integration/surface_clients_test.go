package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/app"
)

// The MongoDB 8.0 options drivers send (let, sort on updateOne, ...),
// through mongosh, the Node.js driver and pymongo.

// runClientScript runs a script of clients/tests with the named client
// against a fresh server and fails unless it prints "<client> surface ok".
func runClientScript(t *testing.T, client, script string) {
	t.Helper()
	s := startServer(t, app.Config{})
	var out string
	switch client {
	case "mongosh":
		out, _ = mongosh(t, dbURI(s, "test"), "--file", scriptPath(t, script))
	case "node":
		out, _ = run(t, ensureNodeClients(t), 2*time.Minute, "node", scriptPath(t, script), s.uri)
	case "pymongo":
		out, _ = run(t, "", 2*time.Minute, ensurePymongo(t), scriptPath(t, script), s.uri)
	}
	if !strings.Contains(out, client+" surface ok") {
		t.Fatalf("%s output:\n%s", client, out)
	}
}

func TestMongoshSurface(t *testing.T) { runClientScript(t, "mongosh", "mongosh_surface.js") }

func TestNodeDriverSurface(t *testing.T) { runClientScript(t, "node", "node_surface.mjs") }

func TestPymongoSurface(t *testing.T) { runClientScript(t, "pymongo", "pymongo_surface.py") }
