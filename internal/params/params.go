// Package params holds the server parameters getParameter and
// setParameter reach: the table, each parameter's type and the checks a
// new value passes, with mongod's refusals. The command layer parses the
// commands; the parts that own a setting register it here.
package params

import (
	"maps"
	"slices"
	"strconv"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Param is one server parameter. Set validates and applies a new value;
// nil Set means the parameter is read-only at runtime.
type Param struct {
	Get func() any
	Set func(v any) error
}

// Value is the parameter as getParameter shows it; with details, as
// {value, settableAtRuntime, settableAtStartup}.
func (p Param) Value(details bool) any {
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

// Table is the server's parameter table.
type Table struct {
	mu     sync.RWMutex
	params map[string]Param
	// absent says, for a parameter this server lacks by its settings,
	// what would provide it: the hint a refusal adds.
	absent map[string]string
}

// New returns a table with the parameters every server has.
func New() *Table {
	t := &Table{params: map[string]Param{}, absent: map[string]string{}}
	t.Register("featureCompatibilityVersion", Param{Get: func() any {
		return bson.D{{Key: "version", Value: "8.0"}}
	}})
	return t
}

// Register adds or replaces a parameter.
func (t *Table) Register(name string, param Param) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.params[name] = param
}

// Absent names a parameter this server does not have by its settings,
// with what would provide it, so that an attempt to set it says so.
func (t *Table) Absent(name, provider string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.absent[name] = provider
}

// Unknown is the refusal of a parameter that cannot be set: msg, and the
// switch that provides it when the server lacks it by its settings.
func (t *Table) Unknown(name, msg string) error {
	t.mu.RLock()
	provider := t.absent[name]
	t.mu.RUnlock()
	if provider != "" {
		msg += "; " + name + " needs " + provider
	}
	return mongoerr.New(mongoerr.InvalidOptions, msg)
}

// Lookup returns the parameter called name.
func (t *Table) Lookup(name string) (Param, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	v, ok := t.params[name]
	return v, ok
}

// Names lists the parameters, sorted.
func (t *Table) Names() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Sorted(maps.Keys(t.params))
}

// All is every parameter as getParameter shows it, in name order.
func (t *Table) All(details bool) bson.D {
	var out bson.D
	for _, n := range t.Names() {
		p, _ := t.Lookup(n)
		out = append(out, bson.E{Key: n, Value: p.Value(details)})
	}
	return out
}

// SetFromString sets a parameter from command-line text (--setParameter
// name=value): booleans and integers are parsed, anything else is a string.
func (t *Table) SetFromString(name, raw string) error {
	param, ok := t.Lookup(name)
	if !ok || param.Set == nil {
		return t.Unknown(name, "unknown or read-only parameter "+name)
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
