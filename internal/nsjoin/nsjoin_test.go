package nsjoin

import (
	"fmt"
	"testing"
)

// Join joins, and keeps at most maxNamespaces of them.
func TestNamespacesJoin(t *testing.T) {
	var n Cache
	if got := n.Join("test", "sessions"); got.S != "test.sessions" || got.V != "test.sessions" {
		t.Fatalf("join = %+v", got)
	}
	if got := testing.AllocsPerRun(10, func() { n.Join("test", "sessions") }); got != 0 {
		t.Errorf("joining a known namespace allocates %v times", got)
	}
	for i := range maxNamespaces + 10 {
		coll := fmt.Sprint("c", i)
		if got := n.Join("db", coll); got.S != "db."+coll {
			t.Fatalf("join = %+v", got)
		}
	}
	if len(n.joined) != maxNamespaces {
		t.Errorf("%d namespaces kept, want %d", len(n.joined), maxNamespaces)
	}
}
