package cmdargs

import (
	"errors"
	"sort"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestTypedOrByHand: no command is both typed by its IDL and read by
// hand, and every one read by hand says why (internal/commands' table
// test holds these against the command table).
func TestTypedOrByHand(t *testing.T) {
	for _, name := range Commands() {
		typed, why := Covered(name)
		if typed && why != "" {
			t.Errorf("%s: typed by its IDL and read by hand (%s); want one", name, why)
		}
		if !typed && why == "" {
			t.Errorf("%s: read by hand, with no reason given", name)
		}
	}
}

// TestArgTypesAsMongod: every field of argSpecs refuses a value of the
// wrong type with mongod's code and words, and takes one of its own type
// past the check.
func TestArgTypesAsMongod(t *testing.T) {
	wrong := map[argKind]struct {
		value any
		msg   string // %[1]s the command, %[2]s the field
	}{
		argOptionalBool: {int32(1), "Field '%[2]s' should be a boolean value, but found: int"},
		argOwnedObject:  {"x", "Expected field %[2]sto be of type object"},
		argObject:       {int32(1), "BSON field '%[1]s.%[2]s' is the wrong type 'int', expected type 'object'"},
		argSafeInt64:    {"x", "BSON field '%[1]s.%[2]s' is the wrong type 'string', expected types '[long, int, decimal, double]'"},
		argBool:         {int32(1), "BSON field '%[1]s.%[2]s' is the wrong type 'int', expected type 'bool'"},
		argSafeBool:     {"x", "BSON field '%[1]s.%[2]s' is the wrong type 'string', expected types '[bool, long, int, decimal, double]'"},
		argInt:          {int64(1), "BSON field '%[1]s.%[2]s' is the wrong type 'long', expected type 'int'"},
		argString:       {int32(1), "BSON field '%[1]s.%[2]s' is the wrong type 'int', expected type 'string'"},
		argArray:        {bson.D{}, "BSON field '%[1]s.%[2]s' is the wrong type 'object', expected type 'array'"},
		argTimestamp:    {int64(1), "BSON field '%[1]s.%[2]s' is the wrong type 'long', expected type 'timestamp'"},
	}
	right := map[argKind]any{
		argOptionalBool: true, argOwnedObject: bson.D{}, argObject: bson.D{},
		argSafeInt64: int64(1), argBool: false, argSafeBool: int32(0),
		argInt: int32(1), argString: "x", argArray: bson.A{},
		argTimestamp: bson.Timestamp{T: 1, I: 1},
	}
	cmds := make([]string, 0, len(argSpecs))
	for cmd := range argSpecs {
		cmds = append(cmds, cmd)
	}
	sort.Strings(cmds)
	for _, cmd := range cmds {
		for field, kind := range argSpecs[cmd] {
			w, ok := wrong[kind]
			if !ok {
				t.Fatalf("kind %d has no row here", kind)
			}
			err := checkArgType(cmd, field, w.value, kind)
			want := mongoerr.Newf(mongoerr.TypeMismatch, w.msg, cmd, field)
			if err == nil || err.Error() != want.Error() {
				t.Errorf("%s.%s = %v: %v, want %v", cmd, field, w.value, err, want)
			}
			if err := checkArgType(cmd, field, right[kind], kind); err != nil {
				t.Errorf("%s.%s = %v: %v, want it taken", cmd, field, right[kind], err)
			}
		}
	}
	want := mongoerr.New(mongoerr.TypeMismatch, "Field 'singleBatch' should be a boolean value, but found: null")
	if err := checkArgType("find", "singleBatch", nil, argOptionalBool); err == nil || err.Error() != want.Error() {
		t.Errorf("singleBatch: null: %v", err)
	}
}

// TestMaxTimeMSAsMongod: the generic maxTimeMS's checks, in mongod's
// words.
func TestMaxTimeMSAsMongod(t *testing.T) {
	for _, tc := range []struct {
		v    any
		ms   int64
		code mongoerr.Code
		msg  string
	}{
		{int32(100), 100, 0, ""},
		{int64(0), 0, 0, ""},
		{2.0, 2, 0, ""},
		{"1", 0, mongoerr.BadValue, "maxTimeMS must be a number"},
		{nil, 0, mongoerr.BadValue, "maxTimeMS must be a number"},
		{1.5, 0, mongoerr.BadValue, "maxTimeMS has non-integral value"},
		{int32(-1), 0, mongoerr.BadValue, "-1 value for maxTimeMS is out of range [0, 2147483647]"},
		{int64(1) << 31, 0, mongoerr.BadValue, "2147483648 value for maxTimeMS is out of range [0, 2147483647]"},
	} {
		ms, err := MaxTimeMS(tc.v)
		if tc.code == 0 {
			if err != nil || ms != tc.ms {
				t.Errorf("%v: %d, %v; want %d", tc.v, ms, err, tc.ms)
			}
			continue
		}
		var me *mongoerr.Error
		if !errors.As(err, &me) || me.Code != tc.code || me.Msg != tc.msg {
			t.Errorf("%v: %v, want (%d) %s", tc.v, err, tc.code, tc.msg)
		}
	}
}
