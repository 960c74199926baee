// Package dirlock keeps two servers off one data directory: the first
// holds an exclusive lock on DIR/mayfly.lock, which names its process, for
// as long as it runs; a second is refused with that process's ID.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// FileName is the lock file inside the data directory.
const FileName = "mayfly.lock"

// Lock is a held data directory lock.
type Lock struct {
	f *os.File
}

// Acquire creates dir if needed and locks it. The lock is the operating
// system's (flock), so it goes with the process, also on kill -9: a stale
// file left behind locks nothing.
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is in use by another mayfly (pid %s)", dir, holder(f))
		}
		return nil, fmt.Errorf("data directory %s: lock %s: %w", dir, path, err)
	}
	if err := writePID(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	return &Lock{f: f}, nil
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// holder reads the holding process's ID from the lock file.
func holder(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid := strings.TrimSpace(string(b[:n]))
	if _, err := strconv.Atoi(pid); err != nil {
		return "unknown"
	}
	return pid
}

// Release unlocks and removes the lock file.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	name := l.f.Name()
	_ = os.Remove(name)
	err := l.f.Close() // closing drops the flock
	l.f = nil
	return err
}
