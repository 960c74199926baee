package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// TestRouteHelpAndReadme: `mayfly route --help` prints its usage and
// succeeds, and the README names each of its flags.
func TestRouteHelpAndReadme(t *testing.T) {
	var out bytes.Buffer
	if err := runRoute([]string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("route --help: %v", err)
	}
	if !strings.Contains(out.String(), "usage: mayfly route --configdb") {
		t.Fatalf("route --help printed:\n%s", out.String())
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	flags := regexp.MustCompile(`(?m)^  -([A-Za-z_-]+)`).FindAllStringSubmatch(out.String(), -1)
	if len(flags) < 5 {
		t.Fatalf("route --help lists %d flags:\n%s", len(flags), out.String())
	}
	for _, f := range flags {
		if !strings.Contains(string(readme), "`--"+f[1]) {
			t.Errorf("the README does not name route's --%s", f[1])
		}
	}
}

// TestRouteNeedsConfigDB: without --configdb, or with a malformed one,
// the router does not start.
func TestRouteNeedsConfigDB(t *testing.T) {
	var out bytes.Buffer
	if err := runRoute(nil, &out); err == nil || !strings.Contains(err.Error(), "--configdb") {
		t.Errorf("no --configdb: %v", err)
	}
	if err := runRoute([]string{"--configdb", "127.0.0.1:27019", "--port", "0"}, &out); err == nil || !strings.Contains(err.Error(), "setName/host:port") {
		t.Errorf("--configdb without a set name: %v", err)
	}
}

// TestRouterGCTarget: the router collects at routerGCPercent unless GOGC
// is set, and then leaves the runtime's reading of it alone.
func TestRouterGCTarget(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	setRouterGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != routerGCPercent {
		t.Fatalf("without GOGC the router collects at %d %%, want %d", got, routerGCPercent)
	}
	setRouterGC(func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("with GOGC set the router changed the target to %d %%", got)
	}
}
