package failpoint

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func always(bson.D) bool { return true }

// fireN evaluates p n times and returns which evaluations fired.
func fireN(p *Point, n int, applies func(bson.D) bool) []bool {
	out := make([]bool, n)
	for i := range out {
		_, out[i] = p.Evaluate(applies)
	}
	return out
}

func TestModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode any
		want []bool
	}{
		{"off", "off", []bool{false, false, false}},
		{"alwaysOn", "alwaysOn", []bool{true, true, true}},
		{"times 2", bson.D{{Key: "times", Value: int32(2)}}, []bool{true, true, false, false}},
		// mongod disables a {times: 0} point only after it fires once.
		{"times 0", bson.D{{Key: "times", Value: int32(0)}}, []bool{true, false}},
		{"skip 2", bson.D{{Key: "skip", Value: int64(2)}}, []bool{false, false, true, true}},
		{"probability 0", bson.D{{Key: "activationProbability", Value: 0.0}}, []bool{false, false, false, false}},
		{"probability 1", bson.D{{Key: "activationProbability", Value: int32(1)}}, []bool{true, true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry(1, FailCommand)
			if _, err := r.Configure(FailCommand, bson.D{{Key: "configureFailPoint", Value: FailCommand}, {Key: "mode", Value: tc.mode}}); err != nil {
				t.Fatal(err)
			}
			got := fireN(r.Point(FailCommand), len(tc.want), always)
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("fired %v, want %v", got, tc.want)
				}
			}
			// On, read without the lock, tells whether the point can
			// still fire: false once off or out of times.
			p := r.Point(FailCommand)
			if on, mode := r.On(FailCommand), p.setting.Mode; on != (mode != Off) {
				t.Fatalf("On() = %v with mode %v", on, mode)
			}
		})
	}
}

// Calls the predicate refuses neither consume times nor count as entries.
func TestRefusedCallsDoNotConsume(t *testing.T) {
	r := NewRegistry(1, FailCommand)
	p := r.Point(FailCommand)
	p.Set(Setting{Mode: Times, Count: 1, Data: bson.D{{Key: "k", Value: "v"}}})
	if got := fireN(p, 3, func(bson.D) bool { return false }); got[0] || got[1] || got[2] {
		t.Fatalf("fired for refused calls: %v", got)
	}
	data, ok := p.Evaluate(always)
	if !ok || len(data) != 1 || data[0].Key != "k" {
		t.Fatalf("Evaluate = %v, %v; want the data and true", data, ok)
	}
	count, err := r.Configure(FailCommand, bson.D{{Key: "configureFailPoint", Value: FailCommand}, {Key: "mode", Value: "off"}})
	if err != nil || count != 1 {
		t.Fatalf("count %d, %v; want 1 entry", count, err)
	}
}

func TestProbabilityIsRoughlyKept(t *testing.T) {
	p := NewRegistry(42, FailCommand).Point(FailCommand)
	p.Set(Setting{Mode: Random, Probability: 0.5})
	fired := 0
	for _, f := range fireN(p, 2000, always) {
		if f {
			fired++
		}
	}
	if fired < 800 || fired > 1200 {
		t.Fatalf("fired %d of 2000 at p=0.5", fired)
	}
}

func TestConfigureErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  bson.D
		code mongoerr.Code
		msg  string
	}{
		{"unknown point", bson.D{{Key: "configureFailPoint", Value: "nope"}, {Key: "mode", Value: "off"}}, mongoerr.FailPointSetFailed, "nope not found"},
		{"no mode", bson.D{{Key: "configureFailPoint", Value: FailCommand}}, mongoerr.IllegalOperation, "When setting a failpoint, you must supply a 'mode'"},
		{"unknown mode", mode("sometimes"), mongoerr.BadValue, "unknown mode: sometimes"},
		{"mode type", mode(int32(1)), mongoerr.TypeMismatch, "'mode' must be a string or JSON object"},
		{"empty mode doc", mode(bson.D{}), mongoerr.BadValue, "'mode' must be one of 'off', 'alwaysOn', '{times:n}', '{skip:n}' or '{activationProbability:p}'"},
		{"negative times", mode(bson.D{{Key: "times", Value: int32(-1)}}), mongoerr.BadValue, "'times' option to 'mode' must be positive"},
		{"huge skip", mode(bson.D{{Key: "skip", Value: int64(1) << 40}}), mongoerr.BadValue, "'skip' option to 'mode' is too large"},
		{"times type", mode(bson.D{{Key: "times", Value: "2"}}), mongoerr.TypeMismatch, "Expected field \"times\" to have numeric type, but found string"},
		{"fractional times", mode(bson.D{{Key: "times", Value: 1.5}}), mongoerr.BadValue, "Expected field \"times\" to have a value exactly representable as a 64-bit integer, but found times: 1.5"},
		{"probability type", mode(bson.D{{Key: "activationProbability", Value: "x"}}), mongoerr.TypeMismatch, "the 'activationProbability' option to 'mode' must be a double between 0 and 1"},
		{"probability range", mode(bson.D{{Key: "activationProbability", Value: 1.5}}), mongoerr.BadValue, "activationProbability must be between 0.0 and 1.0; found 1.5"},
		{"data type", append(mode("alwaysOn"), bson.E{Key: "data", Value: "x"}), mongoerr.TypeMismatch, "the 'data' option must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, _ := tc.cmd[0].Value.(string)
			_, err := NewRegistry(1, FailCommand).Configure(name, tc.cmd)
			var me *mongoerr.Error
			if !errors.As(err, &me) || me.Code != tc.code || me.Msg != tc.msg {
				t.Fatalf("error %v; want %s %q", err, tc.code.Name(), tc.msg)
			}
		})
	}
}

func mode(m any) bson.D {
	return bson.D{{Key: "configureFailPoint", Value: FailCommand}, {Key: "mode", Value: m}}
}

func TestFailureApplies(t *testing.T) {
	data := bson.D{
		{Key: "failCommands", Value: bson.A{"insert", int32(3), "findandmodify"}},
		{Key: "appName", Value: "app1"},
		{Key: "errorCode", Value: 91.0},
	}
	f := ReadCommandFailure(data)
	if !f.HasErrorCode || f.ErrorCode != mongoerr.ShutdownInProgress || !f.FailsCommand() {
		t.Fatalf("errorCode read as %v/%v", f.ErrorCode, f.HasErrorCode)
	}
	for _, tc := range []struct {
		call Call
		want bool
	}{
		{Call{Names: []string{"insert"}, AppName: "app1"}, true},
		{Call{Names: []string{"findAndModify", "findandmodify"}, AppName: "app1"}, true},
		{Call{Names: []string{"insert"}, AppName: "other"}, false},
		{Call{Names: []string{"find"}, AppName: "app1"}, false},
		{Call{Names: []string{"insert"}, AppName: "app1", Internal: true}, false},
	} {
		if got := f.Applies(tc.call); got != tc.want {
			t.Errorf("Applies(%+v) = %v, want %v", tc.call, got, tc.want)
		}
	}
	self := ReadCommandFailure(bson.D{{Key: "failCommands", Value: bson.A{"configureFailPoint"}}})
	if self.Applies(Call{Names: []string{"configureFailPoint"}}) {
		t.Error("configureFailPoint must never be failed")
	}
}

func TestBlockTime(t *testing.T) {
	for _, tc := range []struct {
		data bson.D
		ms   int64
		msg  string
	}{
		{bson.D{{Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: int32(30)}}, 30, ""},
		{bson.D{{Key: "blockConnection", Value: true}}, 0, "must specify 'blockTimeMS' when 'blockConnection' is true"},
		{bson.D{{Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: int32(-1)}}, 0, "'blockTimeMS' must be non-negative"},
	} {
		d, err := ReadCommandFailure(tc.data).BlockTime()
		if tc.msg != "" {
			if me := mongoerr.As(err); me == nil || me.Code != mongoerr.InvalidOptions || me.Msg != tc.msg {
				t.Errorf("%v: error %v, want InvalidOptions %q", tc.data, err, tc.msg)
			}
			continue
		}
		if err != nil || d.Milliseconds() != tc.ms {
			t.Errorf("%v: %v, %v; want %d ms", tc.data, d, err, tc.ms)
		}
	}
}
