package logring

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestRingKeepsLatestLinesInMongodShape(t *testing.T) {
	var out bytes.Buffer
	ring := New()
	log := slog.New(NewHandler(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}), ring))
	log.Warn("disk slow", "ms", 12)
	ring.Started()
	log.Debug("not kept: below the level")
	comp := log.With("component", "pebblestore").WithGroup("g")
	comp.Info("flushed", "bytes", 7)
	for i := range Capacity + 5 {
		log.Info("line", "i", i)
	}
	lines, total := ring.Global()
	if total != Capacity+7 || len(lines) != Capacity {
		t.Fatalf("total %d, kept %d", total, len(lines))
	}
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if last["msg"] != "line" || last["s"] != "I" || last["attr"].(map[string]any)["i"] != float64(Capacity+4) {
		t.Fatalf("last line %v", last)
	}
	if !strings.Contains(lines[0], fmt.Sprintf(`"i":%d`, 5)) {
		t.Fatalf("oldest kept line is the sixth: %s", lines[0])
	}
	warn := ring.StartupWarnings()
	if len(warn) != 1 || !strings.Contains(warn[0], `"s":"W"`) || !strings.Contains(warn[0], "disk slow") {
		t.Fatalf("startup warnings %v", warn)
	}
	if !strings.Contains(out.String(), "flushed") || strings.Contains(out.String(), "not kept") {
		t.Fatalf("records reach the next handler as its level says: %s", out.String()[:200])
	}
}

func TestGroupsAndComponent(t *testing.T) {
	ring := New()
	log := slog.New(NewHandler(slog.NewJSONHandler(&bytes.Buffer{}, nil), ring))
	log.With("component", "ttl").WithGroup("batch").Info("deleted", "n", 3)
	lines, _ := ring.Global()
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got["c"] != "ttl" || got["attr"].(map[string]any)["batch"].(map[string]any)["n"] != float64(3) {
		t.Fatalf("line %s", lines[0])
	}
}
