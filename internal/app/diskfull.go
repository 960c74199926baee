package app

import "sync"

// A server on a full disk (docs/design/0006, "Full disk at start") serves
// reads and refuses writes until the storage engine reopens for writing.
// The work the server writes on its own waits meanwhile rather than fail
// over and over: the TTL monitor's deletions and the expiry warnings
// would otherwise retry, and log, at their 50 ms pace, while reads keep
// hiding expired documents. The reopen starts them again at once. A
// replica set member's raft waits too: raft stops for good at its first
// log write that fails (internal/repl), so started on a full disk it
// would stay stopped until a restart.

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

// raftStart guards starting a member's raft after the storage reopens
// against Shutdown closing the member meanwhile.
type raftStart struct {
	mu     sync.Mutex
	closed bool
}

// startReplicaWhenWritable starts this member's raft now if storage takes
// writes, and otherwise at the first reopen for writing.
func (a *App) startReplicaWhenWritable() error {
	if a.rs == nil || a.eng.Writable() {
		return a.startReplica()
	}
	a.cfg.Logger.Warn("replica set member: raft starts once the storage takes writes")
	var once sync.Once
	a.eng.OnReopen(func() { once.Do(a.startReplicaLate) })
	return nil
}

func (a *App) startReplicaLate() {
	a.raft.mu.Lock()
	defer a.raft.mu.Unlock()
	if a.raft.closed {
		return
	}
	if err := a.startReplica(); err != nil {
		a.cfg.Logger.Error("replica set member: starting raft after the storage reopened failed", "err", err)
		return
	}
	a.cfg.Logger.Info("replica set member: raft started, the storage takes writes")
}

// closeReplica stops this member's raft, and keeps a late start from
// starting it.
func (a *App) closeReplica() {
	a.raft.mu.Lock()
	defer a.raft.mu.Unlock()
	a.raft.closed = true
	if a.rs != nil {
		a.rs.Close()
	}
}
