package commands

import (
	"testing"

	"github.com/mayflydb/mayfly/internal/auth"
)

// TestEveryCommandHasItsPrivileges keeps the privilege table complete: a
// command missing from it would be refused to all but root.
func TestEveryCommandHasItsPrivileges(t *testing.T) {
	for name := range buildTable(false) {
		if !auth.KnownCommand(name) {
			t.Errorf("command %s has no line in internal/auth's privilege table", name)
		}
	}
}
