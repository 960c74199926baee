package commands

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/diag"
)

// cmdListCommands lists the commands this server answers, with the
// fields mongod gives each.
func cmdListCommands(h *Handler, r *request) (bson.D, error) {
	if err := checkFields(r); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(h.table))
	for n, c := range h.table {
		if c.name == n { // aliases are not listed, as on mongod
			names = append(names, n)
		}
	}
	sort.Strings(names)
	cmds := make([]diag.CommandInfo, len(names))
	for i, n := range names {
		cmds[i] = diag.CommandInfo{Name: n, AdminOnly: h.table[n].adminOnly, APIV1: h.table[n].apiV1}
	}
	return diag.ListCommands(cmds), nil
}
