package repl

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestRaftLoggerQuietsPerEntryChatter: raft's line per replaced entry
// goes to debug, its other messages stay at info.
func TestRaftLoggerQuietsPerEntryChatter(t *testing.T) {
	var out bytes.Buffer
	l := raftLogger{slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	l.Infof("entry at index %d missing from unstable log; ignoring", 33933)
	l.Infof("%x became leader at term %d", 1, 7)
	if got := out.String(); strings.Contains(got, "unstable") || !strings.Contains(got, "became leader at term 7") {
		t.Fatalf("info log:\n%s", got)
	}
}
