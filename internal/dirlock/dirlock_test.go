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

func TestLongerStalePIDIsTrimmed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte("12345678901234567890\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	b, _ := os.ReadFile(path)
	if string(b) != strconv.Itoa(os.Getpid())+"\n" || !l.NamesHolder() {
		t.Fatalf("lock file holds %q (names holder: %v), want this pid alone", b, l.NamesHolder())
	}
}

func TestReleaseKeepsTheFileForTheNextPID(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil || len(b) == 0 {
		t.Fatalf("after Release the lock file holds %q, %v: its bytes are the next server's room for its pid", b, err)
	}
}

// A pid in the file that names no running process (a server that has not
// yet written its own) is not reported as the holder.
func TestHolderNamingNoProcessIsUnknown(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	const noProcess = "2147483647" // above any pid_max
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(noProcess+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir)
	want := "data directory " + dir + " is in use by another mayfly (pid unknown)"
	if err == nil || err.Error() != want {
		t.Fatalf("second Acquire: %v, want %q", err, want)
	}
}
