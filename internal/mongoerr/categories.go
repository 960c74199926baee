package mongoerr

// Error categories of mongod's error_codes.yml that drivers act on.

// IsNotPrimaryError reports whether c is in mongod's NotPrimaryError
// category: a reply with one carries the member's topologyVersion.
func (c Code) IsNotPrimaryError() bool {
	switch c {
	case NotWritablePrimary, NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary,
		InterruptedDueToReplStateChange, PrimarySteppedDown:
		return true
	}
	return false
}

// IsRetriableError reports whether c is one mongod labels
// RetryableWriteError: its RetriableError category, as the retryable
// writes specification lists it.
func (c Code) IsRetriableError() bool {
	switch c {
	case HostUnreachable, HostNotFound, NetworkTimeout, ShutdownInProgress,
		PrimarySteppedDown, ExceededTimeLimit, SocketException, NotWritablePrimary,
		InterruptedAtShutdown, InterruptedDueToReplStateChange, NotPrimaryNoSecondaryOk,
		NotPrimaryOrSecondary:
		return true
	}
	return false
}

// IsSnapshotError reports whether c is in mongod's SnapshotError
// category: a transaction that meets one may be retried whole.
func (c Code) IsSnapshotError() bool {
	switch c {
	case SnapshotTooOld, SnapshotUnavailable, StaleChunkHistory, MigrationConflict:
		return true
	}
	return false
}

// IsNonResumableChangeStreamError reports whether c is in mongod's
// NonResumableChangeStreamError category: every reply with one carries
// the label of that name, so that a driver stops resuming.
func (c Code) IsNonResumableChangeStreamError() bool {
	return c == ChangeStreamFatalError || c == ChangeStreamHistoryLost
}

// IsInterruption reports whether c is in mongod's Interruption category:
// the operation was stopped (maxTimeMS, killOp, a disconnect, a
// shutdown, a state change), and a write command fails whole with it
// rather than reporting it as one statement's write error.
func (c Code) IsInterruption() bool {
	switch c {
	case LockTimeout, MaxTimeMSExpired, CursorKilled, ExceededTimeLimit, ClientDisconnect,
		TransactionCoordinatorSteppingDown, TransactionCoordinatorReachedAbortDecision,
		TransactionExceededLifetimeLimitSeconds, InterruptedDueToStorageChange,
		InterruptedDueToReshardingCriticalSection, InterruptedAtShutdown, Interrupted,
		InterruptedDueToReplStateChange, ClientMarkedKilled, RetriableRemoteCommandFailure,
		InterruptedDueToFCVChange:
		return true
	}
	return false
}
