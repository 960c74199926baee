package expr

import (
	"context"
	"testing"

	"github.com/mayflydb/mayfly/internal/expr/exprtest"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// interruptN is the length of every input below: large enough that a loop
// which looks at its guard once per element is told from one that looks
// once per call.
const interruptN = 2000

// TestEveryOperatorIsClassified: each registered operator is either a
// looping operator with a row or a constant one with its reason, so a new
// operator fails here until someone decides which.
func TestEveryOperatorIsClassified(t *testing.T) {
	looping, constant := exprtest.LoopingOperators(interruptN), exprtest.ConstantOperators()
	registered := map[string]bool{}
	for _, name := range OperatorNames() {
		registered[name] = true
		_, loops := looping[name]
		_, isConstant := constant[name]
		if loops == isConstant {
			t.Errorf("%s: looping %v, constant %v; it must be exactly one", name, loops, isConstant)
		}
	}
	for name := range looping {
		if !registered[name] {
			t.Errorf("looping operator %s is not registered", name)
		}
	}
	for name := range constant {
		if !registered[name] {
			t.Errorf("constant operator %s is not registered", name)
		}
	}
}

// TestLoopingOperatorsLookAtTheGuard: every looping operator counts its
// steps on the Guard (at least one per element where the loop is
// Mayfly's), and a Guard whose operation has ended stops it with the
// operation's error.
func TestLoopingOperatorsLookAtTheGuard(t *testing.T) {
	doc := exprtest.Inputs(interruptN)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for name, row := range exprtest.LoopingOperators(interruptN) {
		t.Run(name, func(t *testing.T) {
			e := mustCompile(t, row.Spec)
			g := NewGuard(context.Background())
			if _, err := e.Eval(doc, WithGuard(nil, g)); err != nil {
				t.Fatalf("uninterrupted: %v", err)
			}
			want := uint64(1)
			if row.PerElement {
				want = interruptN
			}
			if g.Steps() < want {
				t.Errorf("counted %d steps over %d elements, want at least %d", g.Steps(), interruptN, want)
			}
			if _, err := e.Eval(doc, WithGuard(nil, NewGuard(ended))); codeOf(err) != mongoerr.Interrupted {
				t.Errorf("with its operation ended: %v, want Interrupted", err)
			}
		})
	}
}
