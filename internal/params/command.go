package params

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// GetCommand answers getParameter, on a server and on a router alike.
// first is the command field's value: 1 (the parameters named in fields),
// "*" (all of them) or {allParameters, showDetails}; fields are the
// command's other fields, its generic arguments left out.
func (t *Table) GetCommand(first any, fields []bson.E) (bson.D, error) {
	all, details, err := getOptions(first)
	if err != nil {
		return nil, err
	}
	if all {
		return t.All(details), nil
	}
	var out bson.D
	for _, e := range fields {
		p, ok := t.Lookup(e.Key)
		if !ok {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "no option found to get")
		}
		out = append(out, bson.E{Key: e.Key, Value: p.Value(details)})
	}
	if len(out) == 0 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no option found to get")
	}
	return out, nil
}

// SetCommand answers setParameter: fields (generic arguments left out)
// name one parameter and its new value; the reply holds the value it had.
func (t *Table) SetCommand(fields []bson.E) (bson.D, error) {
	if len(fields) == 0 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no option found to set, use help:true to see options ")
	}
	if len(fields) > 1 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "setParameter takes one parameter at a time")
	}
	e := fields[0]
	p, ok := t.Lookup(e.Key)
	if !ok || p.Set == nil {
		return nil, t.Unknown(e.Key, fmt.Sprintf("attempted to set unrecognized parameter [%s], use help:true to see options ", e.Key))
	}
	was := p.Get()
	if err := p.Set(e.Value); err != nil {
		return nil, err
	}
	return bson.D{{Key: "was", Value: was}}, nil
}

// getOptions reads getParameter's first field: 1, "*", or
// {allParameters, showDetails}.
func getOptions(v any) (all, details bool, err error) {
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
				return false, false, mongoerr.WrongType("getParameter", e.Key, e.Value, "bool")
			case e.Key == "allParameters":
				all = b
			default:
				details = b
			}
		}
	}
	return all, details, nil
}
