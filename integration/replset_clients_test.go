package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestReplicaSetMongosh makes a set with rs.initiate, adds a member with
// rs.add and hands over with rs.stepDown, in mongosh as a user would.
func TestReplicaSetMongosh(t *testing.T) {
	bin := buildBinary(t)
	var hosts []string
	for i := 0; i < 3; i++ {
		hosts = append(hosts, startReplSetMember(t, bin))
	}
	extra := startReplSetMember(t, bin)
	quoted := make([]string, len(hosts))
	for i, h := range hosts {
		quoted[i] = fmt.Sprintf("%q", h)
	}
	vars := fmt.Sprintf("var HOSTS = [%s]; var EXTRA = %q;", strings.Join(quoted, ","), extra)
	out, _ := mongosh(t, "mongodb://"+hosts[0]+"/?directConnection=true", "--eval", vars, "--file", scriptPath(t, "mongosh_replset.js"))
	if !strings.Contains(out, "mongosh replset ok") {
		t.Fatalf("mongosh output:\n%s", out)
	}
}

func TestReplicaSetNodeDriver(t *testing.T) {
	rs := startReplSet(t, 3)
	dir := ensureNodeClients(t)
	out, _ := run(t, dir, 2*time.Minute, "node", scriptPath(t, "node_replset.mjs"), rs.uri())
	if !strings.Contains(out, "node replset ok") {
		t.Fatalf("node output:\n%s", out)
	}
}

func TestReplicaSetPymongo(t *testing.T) {
	rs := startReplSet(t, 3)
	py := ensurePymongo(t)
	out, _ := run(t, "", 2*time.Minute, py, scriptPath(t, "pymongo_replset.py"), rs.uri())
	if !strings.Contains(out, "pymongo replset ok") {
		t.Fatalf("pymongo output:\n%s", out)
	}
}
