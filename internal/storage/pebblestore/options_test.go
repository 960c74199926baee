package pebblestore

import "testing"

// A standalone store's L0 waits for four sublevels before compacting; a
// replica-set member's compacts at every flush (docs/design/0002).
func TestL0CompactionThresholdByRole(t *testing.T) {
	for _, tc := range []struct {
		replicated bool
		want       int
	}{{false, l0CompactionThreshold}, {true, l0CompactionThresholdReplicated}} {
		s := openT(t, Options{Dir: t.TempDir(), Replicated: tc.replicated})
		if got := s.pebbleOptions(s.fs, nil, false).L0CompactionThreshold; got != tc.want {
			t.Errorf("replicated %v: L0CompactionThreshold %d, want %d", tc.replicated, got, tc.want)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if l0CompactionThreshold == l0CompactionThresholdReplicated {
		t.Fatal("the two roles' thresholds are the same")
	}
}
