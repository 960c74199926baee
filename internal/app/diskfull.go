package app

// A server on a full disk (docs/design/0006, "Full disk at start") serves
// reads and refuses writes until the storage engine reopens for writing.
// The work the server writes on its own waits meanwhile rather than fail
// over and over: the TTL monitor's deletions and the expiry warnings
// would otherwise retry, and log, at their 50 ms pace, while reads keep
// hiding expired documents. The reopen starts them again at once.

// backgroundWrites reports whether the server's own writes (TTL
// deletions, expiry warnings) run now: on a primary or standalone server
// whose storage takes writes.
func (a *App) backgroundWrites() bool {
	return a.primaryOrStandalone() && a.eng.Writable()
}

// resumeAfterReopen wakes the TTL monitor once storage takes writes again,
// instead of at its next sleep's end, and writes the server's pid into the
// data directory's lock file if the disk had no room for it at start.
func (a *App) resumeAfterReopen() {
	a.eng.OnReopen(func() {
		a.monitor.Kick()
		if err := a.ops.dirLock.RecordPID(); err != nil {
			a.cfg.Logger.Warn("writing the pid into the data directory lock file failed", "err", err)
		}
	})
}
