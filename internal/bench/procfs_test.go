package bench

import (
	"os"
	"testing"
)

func TestProcfsSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := cpuTime(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	rss, err := rssBytes(os.Getpid())
	if err != nil || rss <= 0 {
		t.Fatalf("rss %d, %v", rss, err)
	}
}
