package commands

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/auth"
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
	cmds := bson.D{}
	for _, n := range names {
		c := h.table[n]
		versions := bson.A{}
		if c.apiV1 {
			versions = append(versions, "1")
		}
		cmds = append(cmds, bson.E{Key: n, Value: bson.D{
			{Key: "help", Value: ""},
			{Key: "requiresAuth", Value: auth.RequiresAuthentication(n)},
			{Key: "secondaryOk", Value: true},
			{Key: "adminOnly", Value: c.adminOnly},
			{Key: "apiVersions", Value: versions},
			{Key: "deprecatedApiVersions", Value: bson.A{}},
		}})
	}
	return bson.D{{Key: "commands", Value: cmds}}, nil
}
