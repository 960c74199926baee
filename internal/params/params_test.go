package params

import (
	"math"
	"testing"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Each parameter type takes the values of its kind within its bounds and
// refuses the rest with BadValue, leaving the setting as it was.
func TestTypesCheckValues(t *testing.T) {
	var b bool
	var n int64
	var f float64
	boolParam := Bool(func() bool { return b }, func(v bool) { b = v })
	intParam := Int(func() int64 { return n }, func(v int64) { n = v }, -1)
	floatParam := Float(func() float64 { return f }, func(v float64) { f = v }, 0.01, 1)
	cases := []struct {
		name  string
		param Param
		value any
		want  any // the parameter's value afterwards; nil: refused
	}{
		{"bool true", boolParam, true, true},
		{"bool from number", boolParam, int32(0), false},
		{"bool from string", boolParam, "yes", nil},
		{"int", intParam, int64(7), int32(7)},
		{"int at its minimum", intParam, 1.0 - 2, int32(-1)},
		{"int below its minimum", intParam, int32(-2), nil},
		{"int from string", intParam, "7", nil},
		{"float", floatParam, 0.5, 0.5},
		{"float at its maximum", floatParam, int32(1), 1.0},
		{"float above its maximum", floatParam, 1.5, nil},
		{"float NaN", floatParam, math.NaN(), nil},
	}
	for _, tc := range cases {
		before := tc.param.Get()
		err := tc.param.Set(tc.value)
		switch {
		case tc.want == nil && mongoerr.As(err).Code != mongoerr.BadValue:
			t.Errorf("%s: err %v, want BadValue", tc.name, err)
		case tc.want == nil && tc.param.Get() != before:
			t.Errorf("%s: refused but changed to %v", tc.name, tc.param.Get())
		case tc.want != nil && (err != nil || tc.param.Get() != tc.want):
			t.Errorf("%s: err %v, value %v, want %v", tc.name, err, tc.param.Get(), tc.want)
		}
	}
}

// SetFromString parses text as the parameter's type, and refuses a
// read-only or unknown parameter with the hint Absent gave.
func TestSetFromString(t *testing.T) {
	table := New()
	var secs int64
	table.Register("sleepSecs", Int(func() int64 { return secs }, func(v int64) { secs = v }, 1))
	table.Absent("offsetSecs", "--setParameter enableTestCommands=1")
	if err := table.SetFromString("sleepSecs", "5"); err != nil || secs != 5 {
		t.Fatalf("sleepSecs=5: err %v, value %d", err, secs)
	}
	if err := table.SetFromString("sleepSecs", "five"); mongoerr.As(err).Code != mongoerr.BadValue {
		t.Fatalf("sleepSecs=five: %v", err)
	}
	err := table.SetFromString("featureCompatibilityVersion", "7.0")
	if mongoerr.As(err).Code != mongoerr.InvalidOptions {
		t.Fatalf("read-only parameter: %v", err)
	}
	err = table.SetFromString("offsetSecs", "1")
	if mongoerr.As(err).Msg != "unknown or read-only parameter offsetSecs; offsetSecs needs --setParameter enableTestCommands=1" {
		t.Fatalf("absent parameter: %v", err)
	}
	if names := table.Names(); len(names) != 2 || names[0] != "featureCompatibilityVersion" || names[1] != "sleepSecs" {
		t.Fatalf("Names() = %v", names)
	}
}
