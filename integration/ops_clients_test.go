package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/app"
)

func TestMongoshOperatorHelpers(t *testing.T) {
	s := startServer(t, app.Config{DataDir: t.TempDir()})
	out, _ := mongosh(t, dbURI(s, "test"), "--file", scriptPath(t, "mongosh_ops.js"))
	if !strings.Contains(out, "mongosh ops ok") {
		t.Fatalf("mongosh output:\n%s", out)
	}
}

func TestPymongoOperatorCommands(t *testing.T) {
	s := startServer(t, app.Config{})
	py := ensurePymongo(t)
	out, _ := run(t, "", 2*time.Minute, py, scriptPath(t, "pymongo_ops.py"), s.uri)
	if !strings.Contains(out, "pymongo ops ok") {
		t.Fatalf("pymongo output:\n%s", out)
	}
}
