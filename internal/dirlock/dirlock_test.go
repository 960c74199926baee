package dirlock

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestSecondLockIsRefusedWithTheHoldersPID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir)
	want := "data directory " + dir + " is in use by another mayfly (pid " + strconv.Itoa(os.Getpid()) + ")"
	if err == nil || err.Error() != want {
		t.Fatalf("second Acquire: %v, want %q", err, want)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Acquire(dir)
	if err != nil {
		t.Fatalf("after Release the directory is free: %v", err)
	}
	defer again.Release()
}

func TestStaleFileLocksNothing(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("999999\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("a lock file left by a killed process must not block: %v", err)
	}
	defer l.Release()
	b, _ := os.ReadFile(filepath.Join(dir, FileName))
	if strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("lock file names %q", b)
	}
}
