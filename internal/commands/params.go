package commands

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func cmdGetParameter(h *Handler, r *request) (bson.D, error) {
	all, details, err := getParameterOptions(r.body[0].Value)
	if err != nil {
		return nil, err
	}
	if all {
		return h.deps.Params.All(details), nil
	}
	var out bson.D
	for _, e := range r.body[1:] {
		if cmdargs.IsGeneric(e.Key) {
			continue
		}
		p, ok := h.deps.Params.Lookup(e.Key)
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

func cmdSetParameter(h *Handler, r *request) (bson.D, error) {
	var out bson.D
	for _, e := range r.body[1:] {
		if cmdargs.IsGeneric(e.Key) {
			continue
		}
		if out != nil {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "setParameter takes one parameter at a time")
		}
		p, ok := h.deps.Params.Lookup(e.Key)
		if !ok || p.Set == nil {
			return nil, h.deps.Params.Unknown(e.Key, fmt.Sprintf("attempted to set unrecognized parameter [%s], use help:true to see options ", e.Key))
		}
		was := p.Get()
		if err := p.Set(e.Value); err != nil {
			return nil, err
		}
		out = bson.D{{Key: "was", Value: was}}
	}
	if out == nil {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no option found to set, use help:true to see options ")
	}
	return out, nil
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
