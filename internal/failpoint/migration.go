package failpoint

// The fail points of chunk migration, one per phase: while one is on
// (alwaysOn, or times n), the migration waits there, so that a test can
// kill a member or step it down at that phase and check what recovery
// makes of it.
const (
	// MigrationHangInCatchUp: the recipient has cloned the range and
	// caught up; the donor has not entered the critical section.
	MigrationHangInCatchUp = "migrationHangInCatchUp"
	// MigrationHangInCriticalSection: the donor holds the critical
	// section, recorded; the recipient has not drained the last writes.
	MigrationHangInCriticalSection = "migrationHangInCriticalSection"
	// MigrationHangBeforeCommit: the donor recorded commitStarted and has
	// not sent the commit to the config servers.
	MigrationHangBeforeCommit = "migrationHangBeforeCommit"
	// MigrationHangAfterCommit: the config servers committed; the donor
	// has not recorded it or released the critical section.
	MigrationHangAfterCommit = "migrationHangAfterCommit"
	// MigrationHangBeforeRangeDeletion: a range deletion task is due and
	// its documents are not yet deleted.
	MigrationHangBeforeRangeDeletion = "migrationHangBeforeRangeDeletion"
	// MigrationHangInClone: the recipient is about to clone.
	MigrationHangInClone = "migrationHangInClone"
	// DocumentMoveHangAfterInsert: an update that changed a document's
	// shard key has inserted it on its new owner; the old copy is not
	// deleted yet.
	DocumentMoveHangAfterInsert = "documentMoveHangAfterInsert"
)

// MigrationNames lists the migration fail points.
func MigrationNames() []string {
	return []string{MigrationHangInClone, MigrationHangInCatchUp, MigrationHangInCriticalSection,
		MigrationHangBeforeCommit, MigrationHangAfterCommit, MigrationHangBeforeRangeDeletion, DocumentMoveHangAfterInsert}
}
