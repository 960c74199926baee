package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/app"
)

// testClockConfig runs a server whose clock the scripts may move.
func testClockConfig() app.Config {
	return app.Config{SetParameters: map[string]string{"enableTestCommands": "1", "ttlMonitorSleepSecs": "1"}}
}

// TestMongoshExpiry runs the session store with refreshOnRead in mongosh.
func TestMongoshExpiry(t *testing.T) {
	runClockScript(t, "mongosh", "mongosh_expiry.js", "mongosh expiry ok")
}

// TestPymongoExpiry runs the same session store through pymongo.
func TestPymongoExpiry(t *testing.T) {
	runClockScript(t, "pymongo", "pymongo_expiry.py", "pymongo expiry ok")
}

// TestMongoshClusteredExpiry runs a clustered collection with
// expireAfterSeconds in mongosh.
func TestMongoshClusteredExpiry(t *testing.T) {
	runClockScript(t, "mongosh", "mongosh_clustered.js", "mongosh clustered ok")
}

// TestPymongoClustered runs a clustered TTL collection and collMod of an
// lruLimit through pymongo.
func TestPymongoClustered(t *testing.T) {
	runClockScript(t, "pymongo", "pymongo_clustered.py", "pymongo clustered ok")
}

// runClockScript runs a client script (mongosh or pymongo) against a
// server with the test clock, and wants marker in its output.
func runClockScript(t *testing.T, client, script, marker string) {
	t.Helper()
	var py string
	if client == "pymongo" {
		py = ensurePymongo(t)
	}
	s := startServer(t, testClockConfig())
	var out string
	if client == "mongosh" {
		out, _ = mongosh(t, dbURI(s, "test"), "--file", scriptPath(t, script))
	} else {
		out, _ = run(t, "", 2*time.Minute, py, scriptPath(t, script), s.uri)
	}
	if !strings.Contains(out, marker) {
		t.Fatalf("%s output:\n%s", client, out)
	}
}
