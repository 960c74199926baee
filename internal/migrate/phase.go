package migrate

import (
	"fmt"
)

// Phase is how far a migration got, as its donor records it in
// config.migrationCoordinators before it starts each step.
type Phase string

// The phases, in order. A migration ends committed or aborted.
const (
	PhaseClone           Phase = "clone"
	PhaseCatchUp         Phase = "catchUp"
	PhaseCriticalSection Phase = "criticalSection"
	PhaseCommitStarted   Phase = "commitStarted"
	PhaseCommitted       Phase = "committed"
	PhaseAborted         Phase = "aborted"
)

// next lists the phases each phase may move to: forward one step, or to
// aborted before the commit was sent. Once the commit went to the config
// servers only their answer decides.
var next = map[Phase][]Phase{
	PhaseClone:           {PhaseCatchUp, PhaseAborted},
	PhaseCatchUp:         {PhaseCriticalSection, PhaseAborted},
	PhaseCriticalSection: {PhaseCommitStarted, PhaseAborted},
	PhaseCommitStarted:   {PhaseCommitted, PhaseAborted},
}

// Phases lists every phase in order.
func Phases() []Phase {
	return []Phase{PhaseClone, PhaseCatchUp, PhaseCriticalSection, PhaseCommitStarted, PhaseCommitted, PhaseAborted}
}

// Advance checks that a migration may go from one phase to another.
func Advance(from, to Phase) error {
	for _, p := range next[from] {
		if p == to {
			return nil
		}
	}
	return fmt.Errorf("migrate: a migration in phase %q cannot go to %q", from, to)
}

// Final reports whether the phase ends the migration.
func (p Phase) Final() bool { return p == PhaseCommitted || p == PhaseAborted }

// Outcome is what the config servers' chunks say of a migration whose
// donor lost track of it: whether the recipient owns the range.
type Outcome int

// The outcomes a recovering donor reads from config.chunks.
const (
	OutcomeUnknown Outcome = iota // the config servers could not be read
	OutcomeDonorOwns
	OutcomeRecipientOwns
)

// Action is what a new donor primary does with a migration it finds
// recorded and unfinished.
type Action int

// The recovery actions.
const (
	// Wait: the outcome cannot be known yet; keep the critical section
	// (writes to the range stay blocked) and ask again.
	Wait Action = iota
	// FinishCommit: the recipient owns the range; release it to the
	// recipient and schedule the donor's copy for deletion.
	FinishCommit
	// FinishAbort: the donor still owns the range; drop the recipient's
	// partial copy.
	FinishAbort
)

// Recover is what a member that finds the record of a migration in phase
// p, after a failover or a restart, does. Before the commit was sent no
// one but this donor can have changed config.chunks, so it aborts without
// asking; after, the config servers' chunks decide, and without them it
// waits, since guessing could leave two owners or none.
func Recover(p Phase, o Outcome) Action {
	switch p {
	case PhaseCommitted:
		return FinishCommit
	case PhaseClone, PhaseCatchUp, PhaseCriticalSection, PhaseAborted:
		return FinishAbort
	}
	switch o {
	case OutcomeRecipientOwns:
		return FinishCommit
	case OutcomeDonorOwns:
		return FinishAbort
	}
	return Wait
}
