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
	// namesHolder is false when the disk had no room for the pid: the file
	// is then empty, and a refused server reports the holder as unknown.
	namesHolder bool
}

// Acquire creates dir if needed and locks it. The lock is the operating
// system's (flock), so it goes with the process, also on kill -9: a stale
// file left behind locks nothing. A full disk does not stop it: the lock
// needs no space, and the pid is written only where it fits (NamesHolder).
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
	named, err := writePID(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	return &Lock{f: f, namesHolder: named}, nil
}

// writePID records this process in the locked file and reports whether it
// could. It overwrites the previous pid in place and then trims the rest,
// rather than truncating first: the file outlives its server (Release
// keeps it), so the bytes it already holds take the new pid on a disk with
// no free space. Where even that needs new space (the file is new or
// empty), the file is left empty, so no earlier server's pid can stand for
// the holder.
func writePID(f *os.File) (bool, error) {
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	_, werr := f.WriteAt(pid, 0)
	switch {
	case werr == nil:
		return true, f.Truncate(int64(len(pid)))
	case !noSpace(werr):
		return false, werr
	}
	if err := f.Truncate(0); err != nil {
		return false, fmt.Errorf("clear the lock file after %w: %w", werr, err)
	}
	return false, nil
}

func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// holder reads the holding process's ID from the lock file. The file is
// read only while another process holds the lock, and the holder writes
// its pid as soon as it has it; a pid naming no running process (the
// moment between the two, or a file left empty on a full disk) is
// reported as unknown rather than as a process that is not there.
func holder(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	text := strings.TrimSpace(string(b[:n]))
	pid, err := strconv.Atoi(text)
	if err != nil || pid <= 0 || errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return "unknown"
	}
	return text
}

// NamesHolder reports whether the lock file names this process (false
// when the disk had no room for its pid).
func (l *Lock) NamesHolder() bool { return l.namesHolder }

// Release unlocks the directory. The file stays, with this process's pid,
// for two reasons: the next server can overwrite the pid in place without
// new space, and removing a locked file lets a second server lock the
// removed file while a third creates and locks a new one.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing drops the flock
	l.f = nil
	return err
}

// RecordPID writes this process's pid into the lock file if the disk had
// no room for it at Acquire; a server calls it once space returns.
func (l *Lock) RecordPID() error {
	if l == nil || l.f == nil || l.namesHolder {
		return nil
	}
	named, err := writePID(l.f)
	if err != nil {
		return fmt.Errorf("data directory lock: %w", err)
	}
	l.namesHolder = named
	return nil
}
