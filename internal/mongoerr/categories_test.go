package mongoerr

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestCategoriesOverEveryCode checks every code of the table against the
// categories' members as the server discovery and retryable writes
// specifications list them: a code is in a category exactly when listed.
func TestCategoriesOverEveryCode(t *testing.T) {
	notPrimary := map[Code]bool{
		NotWritablePrimary: true, NotPrimaryNoSecondaryOk: true, NotPrimaryOrSecondary: true,
		InterruptedDueToReplStateChange: true, PrimarySteppedDown: true,
	}
	retriable := map[Code]bool{
		HostUnreachable: true, HostNotFound: true, NetworkTimeout: true, ShutdownInProgress: true,
		PrimarySteppedDown: true, ExceededTimeLimit: true, SocketException: true, NotWritablePrimary: true,
		InterruptedAtShutdown: true, InterruptedDueToReplStateChange: true, NotPrimaryNoSecondaryOk: true,
		NotPrimaryOrSecondary: true,
	}
	snapshot := map[Code]bool{SnapshotTooOld: true, SnapshotUnavailable: true, StaleChunkHistory: true, MigrationConflict: true}
	nonResumable := map[Code]bool{ChangeStreamFatalError: true, ChangeStreamHistoryLost: true}
	interruption := map[Code]bool{
		LockTimeout: true, MaxTimeMSExpired: true, CursorKilled: true, ExceededTimeLimit: true, ClientDisconnect: true,
		TransactionCoordinatorSteppingDown: true, TransactionCoordinatorReachedAbortDecision: true,
		TransactionExceededLifetimeLimitSeconds: true, InterruptedDueToStorageChange: true,
		InterruptedDueToReshardingCriticalSection: true, InterruptedAtShutdown: true, Interrupted: true,
		InterruptedDueToReplStateChange: true, ClientMarkedKilled: true, RetriableRemoteCommandFailure: true,
		InterruptedDueToFCVChange: true,
	}
	if len(names) < 100 {
		t.Fatalf("the code table has %d codes", len(names))
	}
	for code, name := range names {
		if got := code.IsNotPrimaryError(); got != notPrimary[code] {
			t.Errorf("%s (%d).IsNotPrimaryError() = %v", name, code, got)
		}
		if got := code.IsRetriableError(); got != retriable[code] {
			t.Errorf("%s (%d).IsRetriableError() = %v", name, code, got)
		}
		if got := code.IsSnapshotError(); got != snapshot[code] {
			t.Errorf("%s (%d).IsSnapshotError() = %v", name, code, got)
		}
		if got := code.IsNonResumableChangeStreamError(); got != nonResumable[code] {
			t.Errorf("%s (%d).IsNonResumableChangeStreamError() = %v", name, code, got)
		}
		if got := code.IsInterruption(); got != interruption[code] {
			t.Errorf("%s (%d).IsInterruption() = %v", name, code, got)
		}
		_, labelled := replyField(Reply(New(code, "x")), "errorLabels")
		if labelled != nonResumable[code] {
			t.Errorf("%s (%d): reply labelled %v, want %v", name, code, labelled, nonResumable[code])
		}
	}
}

func replyField(d bson.D, key string) (any, bool) {
	for _, e := range d {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}
