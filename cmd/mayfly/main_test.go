package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// A monitor's backlog doubles GOMAXPROCS and its end gives Go's default
// back; a replica set member runs doubled throughout; the GOMAXPROCS
// variable overrides both.
func TestSchedulerThreads(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	t.Setenv("GOMAXPROCS", "chosen") // the variable is restored after the test
	for _, member := range []bool{false, true} {
		threads := newSchedulerThreads(member)
		threads.set(true)
		if threads.cores != before || runtime.GOMAXPROCS(0) != before {
			t.Fatalf("member %v: cores %d, GOMAXPROCS %d: a chosen GOMAXPROCS (%d) must stay", member, threads.cores, runtime.GOMAXPROCS(0), before)
		}
	}
	if err := os.Unsetenv("GOMAXPROCS"); err != nil {
		t.Fatal(err)
	}
	runtime.SetDefaultGOMAXPROCS()
	cores := runtime.GOMAXPROCS(0)
	for _, member := range []bool{false, true} {
		runtime.SetDefaultGOMAXPROCS()
		threads := newSchedulerThreads(member)
		for _, more := range []bool{false, true, false} {
			threads.set(more)
			want := cores
			if more || member {
				want = threadsPerCore * cores
			}
			if got := runtime.GOMAXPROCS(0); threads.cores != cores || got != want {
				t.Fatalf("member %v, more %v: cores %d, GOMAXPROCS %d: want %d and %d", member, more, threads.cores, got, cores, want)
			}
		}
	}
}

// TestReadmeNamesEveryFlag: every flag `mayfly --help` lists has a line
// in the README, so that a new flag cannot go undocumented.
func TestReadmeNamesEveryFlag(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	help := captureStdout(t, func() { _, _ = parseFlags([]string{"--help"}) })
	flags := regexp.MustCompile(`(?m)^  -([A-Za-z_-]+)`).FindAllStringSubmatch(help, -1)
	if len(flags) < 20 {
		t.Fatalf("--help lists %d flags:\n%s", len(flags), help)
	}
	for _, f := range flags {
		if !strings.Contains(string(readme), "`--"+f[1]) {
			t.Errorf("the README does not name --%s", f[1])
		}
	}
}

func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	f()
	os.Stdout = saved
	_ = w.Close()
	return <-done
}
