package commands

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/mongoerr"
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

// getParameterOptions reads getParameter's first field: 1, "*", or
// {allParameters, showDetails}.
func getParameterOptions(v any) (all, details bool, err error) {
	switch x := v.(type) {
	case string:
		return x == "*", false, nil
	case bson.D:
		for _, e := range x {
			b, isBool := e.Value.(bool)
			switch {
			case e.Key != "allParameters" && e.Key != "showDetails":
				return false, false, mongoerr.Newf(mongoerr.Location40415, "BSON field 'getParameter.%s' is an unknown field.", e.Key)
			case !isBool:
				return false, false, wrongType("getParameter", e.Key, e.Value, "bool")
			case e.Key == "allParameters":
				all = b
			default:
				details = b
			}
		}
	}
	return all, details, nil
}

// paramValue is a parameter as getParameter shows it; with details, as
// {value, settableAtRuntime, settableAtStartup}.
func paramValue(p Param, details bool) any {
	if !details {
		return p.Get()
	}
	settable := p.Set != nil
	return bson.D{
		{Key: "value", Value: p.Get()},
		{Key: "settableAtRuntime", Value: settable},
		{Key: "settableAtStartup", Value: settable},
	}
}
