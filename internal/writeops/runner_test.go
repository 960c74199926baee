package writeops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestRunnerAnswersEachStatementOnce: a group's committed statements are
// answered by the group, one that cannot join runs alone in its place,
// a statement with no group runs alone, and an ordered failure stops the
// write before the statements after it. Every statement before the stop
// is answered exactly once.
func TestRunnerAnswersEachStatementOnce(t *testing.T) {
	boom := errors.New("boom")
	var log []string
	note := func(format string, args ...any) { log = append(log, fmt.Sprintf(format, args...)) }
	groups := map[int]func() ([]error, int){
		0: func() ([]error, int) { return []error{nil, errAlone, nil}, 3 },
		3: func() ([]error, int) { return []error{boom, nil}, 1 },
	}
	s := &Runner{Op: Op{CheckCtx: func(context.Context) error { return nil }}, Stmts: stmtFuncs{
		interrupted: func(_ int, err error) error { return err },
		gather: func(i int) (*Group, error) {
			commit, ok := groups[i]
			if !ok {
				return nil, nil
			}
			return &Group{commit: commitFunc(commit), done: CommittedFunc(func(k int) { note("done %d", i+k) })}, nil
		},
		alone: func(i int) (bool, error) { note("alone %d", i); return false, nil },
		failed: func(i int, err error) (bool, error) {
			note("failed %d: %v", i, err)
			return true, nil
		},
	}}
	if err := s.Run(5); err != nil {
		t.Fatal(err)
	}
	want := "done 0, alone 1, alone 2, failed 3: boom"
	if got := strings.Join(log, ", "); got != want {
		t.Fatalf("answers: %s\nwant     %s", got, want)
	}
}

// TestRunnerStopsAtAnInterrupt: with EachInterrupt, an operation that
// has ended stops the write before its next statement, and Interrupted
// decides what the command answers.
func TestRunnerStopsAtAnInterrupt(t *testing.T) {
	ended := errors.New("ended")
	ran := 0
	endsAtTwo := func(context.Context) error {
		if ran == 2 {
			return ended
		}
		return nil
	}
	s := &Runner{Op: Op{CheckCtx: endsAtTwo}, EachInterrupt: true, Stmts: stmtFuncs{
		interrupted: func(i int, err error) error { return fmt.Errorf("statement %d: %w", i, err) },
		gather:      func(int) (*Group, error) { return nil, nil },
		alone:       func(int) (bool, error) { ran++; return false, nil },
	}}
	err := s.Run(5)
	if !errors.Is(err, ended) || !strings.HasPrefix(err.Error(), "statement 2:") || ran != 2 {
		t.Fatalf("Run = %v after %d statements, want statement 2's interrupt after 2", err, ran)
	}
}

// stmtFuncs are Statements made of funcs, for the tests: a nil one is
// never called.
type stmtFuncs struct {
	interrupted func(i int, err error) error
	prior       func(i int, rec bson.D)
	gather      func(i int) (*Group, error)
	alone       func(i int) (bool, error)
	failed      func(i int, err error) (bool, error)
}

func (f stmtFuncs) Interrupted(i int, err error) error    { return f.interrupted(i, err) }
func (f stmtFuncs) Prior(i int, rec bson.D)               { f.prior(i, rec) }
func (f stmtFuncs) Gather(i int) (*Group, error)          { return f.gather(i) }
func (f stmtFuncs) Alone(i int) (bool, error)             { return f.alone(i) }
func (f stmtFuncs) Failed(i int, err error) (bool, error) { return f.failed(i, err) }
