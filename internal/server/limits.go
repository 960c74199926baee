package server

import (
	"errors"
	"log/slog"
	"syscall"
	"time"
)

// errIdleTimeout ends a connection that sent nothing for IdleTimeout.
var errIdleTimeout = errors.New("server: idle connection timed out")

// fdShareForConns is mongod's rule: connections may use at most 80% of
// the process's file descriptors; the rest stay for the storage engine's
// files (WAL, sstables, MANIFEST), the listener and logs, so that a flood
// of clients cannot starve them.
const fdShareForConns = 0.8

// descriptorLimit is RLIMIT_NOFILE's soft limit, or 0 if it cannot be read.
func descriptorLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return r.Cur
}

// connLimit caps the connection limit at fdShareForConns of nofile (no cap
// when nofile is unknown), logging when it lowers a configured limit.
func connLimit(requested int, nofile uint64, log *slog.Logger) int {
	if nofile == 0 || nofile > uint64(DefaultMaxConns)*2 {
		return requested
	}
	most := max(int(float64(nofile)*fdShareForConns), 1)
	if requested <= most {
		return requested
	}
	if requested != DefaultMaxConns {
		log.Warn("connection limit lowered to keep file descriptors for storage",
			"requested", requested, "limit", most, "nofile", nofile)
	}
	return most
}

// waitForRequest waits for a request's first byte, up to IdleTimeout when
// one is set.
func (c *Conn) waitForRequest() error {
	if idle := c.srv.cfg.IdleTimeout; idle > 0 {
		if err := c.nc.SetReadDeadline(time.Now().Add(idle)); err != nil {
			return err
		}
		c.readDeadline = true
	}
	_, err := c.br.Peek(1)
	if err != nil && isTimeout(err) && c.srv.cfg.IdleTimeout > 0 {
		return errIdleTimeout
	}
	return err
}
