package commands

import (
	"fmt"
	"testing"
)

// join joins, and keeps at most maxNamespaces of them.
func TestNamespacesJoin(t *testing.T) {
	var n namespaces
	if got := n.join("test", "sessions"); got.s != "test.sessions" || got.v != "test.sessions" {
		t.Fatalf("join = %+v", got)
	}
	if got := testing.AllocsPerRun(10, func() { n.join("test", "sessions") }); got != 0 {
		t.Errorf("joining a known namespace allocates %v times", got)
	}
	for i := range maxNamespaces + 10 {
		coll := fmt.Sprint("c", i)
		if got := n.join("db", coll); got.s != "db."+coll {
			t.Fatalf("join = %+v", got)
		}
	}
	if len(n.joined) != maxNamespaces {
		t.Errorf("%d namespaces kept, want %d", len(n.joined), maxNamespaces)
	}
}
