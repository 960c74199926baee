package update

import (
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// setMod is $set and $setOnInsert: setting an identical value (same type,
// same bytes) is a no-op, so {$set: {a: 1.0}} on {a: 1} is a change.
type setMod struct{ val any }

func (m setMod) modify(_ *applier, st *state) (any, bool, error) {
	if identical(st.elem, m.val) {
		return nil, false, nil
	}
	return m.val, true, nil
}

func (m setMod) create(*applier) (any, bool, error) { return m.val, true, nil }

// unsetMod removes a field; a missing one, even on an impossible path, is
// a no-op.
type unsetMod struct{}

func (unsetMod) modify(*applier, *state) (any, bool, error) { return removal{}, true, nil }
func (unsetMod) create(*applier) (any, bool, error)         { return nil, false, nil }

// currentDateMod sets the operation's time; it always counts as a change.
type currentDateMod struct{ timestamp bool }

func parseCurrentDate(v any) (modifier, error) {
	switch kindOf(v) {
	case kindOther:
		if _, ok := v.(bool); ok {
			return currentDateMod{}, nil
		}
	case kindDoc:
		return parseCurrentDateType(docOf(v))
	}
	return nil, errf(mongoerr.BadValue, "%s is not valid type for $currentDate. Please use a "+
		"boolean ('true') or a $type expression ({$type: 'timestamp/date'}).", typeName(v))
}

func parseCurrentDateType(d bson.D) (modifier, error) {
	var m currentDateMod
	found := false
	for _, e := range d {
		if e.Key != "$type" {
			return nil, errf(mongoerr.BadValue, "Unrecognized $currentDate option: %s", e.Key)
		}
		switch e.Value {
		case "date":
			m, found = currentDateMod{}, true
		case "timestamp":
			m, found = currentDateMod{timestamp: true}, true
		}
	}
	if !found {
		return nil, errf(mongoerr.BadValue, "The '$type' string field is required to be 'date' "+
			"or 'timestamp': {$currentDate: {field : {$type: 'date'}}}")
	}
	return m, nil
}

func (m currentDateMod) modify(a *applier, _ *state) (any, bool, error) {
	v, _, _ := m.create(a)
	return v, true, nil
}

func (m currentDateMod) create(a *applier) (any, bool, error) {
	if m.timestamp {
		return a.timestamp(), true, nil
	}
	return bson.NewDateTimeFromTime(a.ctx.Now), true, nil
}

// timestamp returns a Timestamp for now; successive calls within one update
// get increasing increments, as MongoDB's cluster clock would hand out.
func (a *applier) timestamp() bson.Timestamp {
	a.tsInc++
	return bson.Timestamp{T: uint32(a.ctx.Now.Unix()), I: a.tsInc}
}
