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
	s := startServer(t, testClockConfig())
	out, _ := mongosh(t, dbURI(s, "test"), "--file", scriptPath(t, "mongosh_expiry.js"))
	if !strings.Contains(out, "mongosh expiry ok") {
		t.Fatalf("mongosh output:\n%s", out)
	}
}

// TestPymongoExpiry runs the same session store through pymongo.
func TestPymongoExpiry(t *testing.T) {
	py := ensurePymongo(t)
	s := startServer(t, testClockConfig())
	out, _ := run(t, "", 2*time.Minute, py, scriptPath(t, "pymongo_expiry.py"), s.uri)
	if !strings.Contains(out, "pymongo expiry ok") {
		t.Fatalf("pymongo output:\n%s", out)
	}
}

// TestMongoshClusteredExpiry runs a clustered collection with
// expireAfterSeconds in mongosh.
func TestMongoshClusteredExpiry(t *testing.T) {
	s := startServer(t, testClockConfig())
	out, _ := mongosh(t, dbURI(s, "test"), "--file", scriptPath(t, "mongosh_clustered.js"))
	if !strings.Contains(out, "mongosh clustered ok") {
		t.Fatalf("mongosh output:\n%s", out)
	}
}

// TestPymongoClustered runs a clustered TTL collection and collMod of an
// lruLimit through pymongo.
func TestPymongoClustered(t *testing.T) {
	py := ensurePymongo(t)
	s := startServer(t, testClockConfig())
	out, _ := run(t, "", 2*time.Minute, py, scriptPath(t, "pymongo_clustered.py"), s.uri)
	if !strings.Contains(out, "pymongo clustered ok") {
		t.Fatalf("pymongo output:\n%s", out)
	}
}
