package ttlmark

import (
	"math"
	"testing"
)

func TestProgressProtocol(t *testing.T) {
	p := New(4)
	if got := p.Begin(); got != math.MinInt64 {
		t.Fatalf("a new index starts from the earliest entry, got %d", got)
	}
	p.Finish(math.MinInt64, 100)
	p.Announce(150)
	if got := p.Start(); got != 100 {
		t.Fatalf("start %d, want the mark", got)
	}
	p.Announce(40)
	begun := p.Begin()
	if begun != 40 {
		t.Fatalf("begin %d, want the announced 40", begun)
	}
	p.Announce(20) // during the pass
	p.Finish(begun, 300)
	if got := p.Begin(); got != 20 {
		t.Fatalf("a write during the pass must lower the next start: %d", got)
	}
	p.Finish(0, 500) // a pass that did not begin at the mark
	if got := p.Mark(); got != 20 {
		t.Fatalf("a stale finish moved the mark to %d", got)
	}
	if cap(p.Slots()) != 4 {
		t.Fatalf("%d slots, want 4", cap(p.Slots()))
	}
}
