package commands

import (
	"fmt"
	"sort"
	"strconv"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Param is one server parameter reachable through getParameter and
// setParameter. Set validates and applies a new value; nil Set means the
// parameter is read-only at runtime.
type Param struct {
	Get func() any
	Set func(v any) error
}

// Params is the server's parameter table.
type Params struct {
	mu     sync.RWMutex
	params map[string]Param
	// absent says, for a parameter this server lacks by its settings,
	// what would provide it: the hint a refusal adds.
	absent map[string]string
}

// NewParams returns a table with the parameters every server has.
func NewParams() *Params {
	p := &Params{params: map[string]Param{}, absent: map[string]string{}}
	p.Register("featureCompatibilityVersion", Param{Get: func() any {
		return bson.D{{Key: "version", Value: "8.0"}}
	}})
	return p
}

// Register adds or replaces a parameter.
func (p *Params) Register(name string, param Param) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.params[name] = param
}

// Absent names a parameter this server does not have by its settings,
// with what would provide it, so that an attempt to set it says so.
func (p *Params) Absent(name, provider string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.absent[name] = provider
}

// unknown is the refusal of a parameter that cannot be set: msg, and the
// switch that provides it when the server lacks it by its settings.
func (p *Params) unknown(name, msg string) error {
	p.mu.RLock()
	provider := p.absent[name]
	p.mu.RUnlock()
	if provider != "" {
		msg += "; " + name + " needs " + provider
	}
	return mongoerr.New(mongoerr.InvalidOptions, msg)
}

func (p *Params) get(name string) (Param, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.params[name]
	return v, ok
}

func (p *Params) names() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]string, 0, len(p.params))
	for n := range p.params {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// BoolParam builds a parameter over a getter and setter of a bool.
func BoolParam(get func() bool, set func(bool)) Param {
	return Param{Get: func() any { return get() }, Set: func(v any) error {
		b, ok := v.(bool)
		if !ok {
			if !bsonutil.IsNumber(v) {
				return mongoerr.Newf(mongoerr.BadValue, "Invalid value for bool parameter: %s", bsonutil.Format(v))
			}
			b = bsonutil.ToFloat(v) != 0
		}
		set(b)
		return nil
	}}
}

// IntParam builds an int32 parameter with a lower bound.
func IntParam(get func() int64, set func(int64), min int64) Param {
	return Param{Get: func() any { return int32(get()) }, Set: func(v any) error {
		if !bsonutil.IsNumber(v) {
			return mongoerr.Newf(mongoerr.BadValue, "Invalid value for int parameter: %s", bsonutil.Format(v))
		}
		n := int64(bsonutil.ToFloat(v))
		if n < min {
			return mongoerr.Newf(mongoerr.BadValue, "Invalid value for parameter: %d is less than the minimum %d", n, min)
		}
		set(n)
		return nil
	}}
}

// FloatParam builds a double parameter within [min, max].
func FloatParam(get func() float64, set func(float64), min, max float64) Param {
	return Param{Get: func() any { return get() }, Set: func(v any) error {
		if !bsonutil.IsNumber(v) {
			return mongoerr.Newf(mongoerr.BadValue, "Invalid value for double parameter: %s", bsonutil.Format(v))
		}
		f := bsonutil.ToFloat(v)
		if !(f >= min && f <= max) { // NaN fails both
			return mongoerr.Newf(mongoerr.BadValue, "Invalid value for parameter: %s is not between %s and %s",
				bsonutil.Format(v), bsonutil.Format(min), bsonutil.Format(max))
		}
		set(f)
		return nil
	}}
}

func cmdGetParameter(h *Handler, r *request) (bson.D, error) {
	all, details, err := getParameterOptions(r.body[0].Value)
	if err != nil {
		return nil, err
	}
	if all {
		return h.allParams(details), nil
	}
	var out bson.D
	for _, e := range r.body[1:] {
		if genericFields[e.Key] {
			continue
		}
		p, ok := h.deps.Params.get(e.Key)
		if !ok {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "no option found to get")
		}
		out = append(out, bson.E{Key: e.Key, Value: paramValue(p, details)})
	}
	if len(out) == 0 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no option found to get")
	}
	return out, nil
}

func (h *Handler) allParams(details bool) bson.D {
	var out bson.D
	for _, n := range h.deps.Params.names() {
		p, _ := h.deps.Params.get(n)
		out = append(out, bson.E{Key: n, Value: paramValue(p, details)})
	}
	return out
}

func cmdSetParameter(h *Handler, r *request) (bson.D, error) {
	var out bson.D
	for _, e := range r.body[1:] {
		if genericFields[e.Key] {
			continue
		}
		if out != nil {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "setParameter takes one parameter at a time")
		}
		p, ok := h.deps.Params.get(e.Key)
		if !ok || p.Set == nil {
			return nil, h.deps.Params.unknown(e.Key, fmt.Sprintf("attempted to set unrecognized parameter [%s], use help:true to see options ", e.Key))
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

// SetFromString sets a parameter from command-line text (--setParameter
// name=value): booleans and integers are parsed, anything else is a string.
func (p *Params) SetFromString(name, raw string) error {
	param, ok := p.get(name)
	if !ok || param.Set == nil {
		return p.unknown(name, "unknown or read-only parameter "+name)
	}
	v, err := parseLike(param.Get(), raw)
	if err != nil {
		return mongoerr.Newf(mongoerr.BadValue, "Invalid value for parameter %s: %s", name, raw)
	}
	return param.Set(v)
}

// parseLike parses raw as a value of the type current has, so that "1"
// sets an int parameter to 1 and a double one to 1.0.
func parseLike(current any, raw string) (any, error) {
	switch current.(type) {
	case bool:
		return strconv.ParseBool(raw)
	case int32, int64:
		return strconv.ParseInt(raw, 10, 64)
	case float64:
		return strconv.ParseFloat(raw, 64)
	}
	return raw, nil
}
