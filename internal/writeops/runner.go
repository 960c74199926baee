package writeops

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/session"
)

// The statement runner. Every write command's statements (insert, update,
// delete, and bulkWrite's ops) go through one loop: a statement that a
// retried txnNumber already ran answers from its record; the others
// commit in groups of one batch (on a replica set one raft round) with
// the statements after them that can join, or run alone. Inserts group
// by docstore.InsertGroup (InsertGroup); updates and deletes that each
// name one document by its _id alone group by docstore.ModifyEach
// (ByIDGroup). A group keeps each statement's own result, write error and
// retry record, so a command answers exactly as its statements sent one
// by one.

// Runner runs a write's statements in order. What differs between the
// commands is in its Stmts: how a statement groups, runs alone, and
// answers.
type Runner struct {
	Op  Op
	Txn *session.Txn // a retryable write's, or nil
	// Opt are the command's write options (durability, and
	// BypassValidation for bypassDocumentValidation).
	Opt docstore.WriteOptions
	// EachInterrupt looks for an interrupt before every statement, not
	// only before a group commits.
	EachInterrupt bool
	// Stmts is the command's side of the run.
	Stmts Statements
}

// Statements is a command's side of a Runner. It is an interface, not
// a set of funcs, so that a command's state holds it: a command
// implements it on the struct it runs with, one allocation, where each
// func would be a closure of its own.
type Statements interface {
	// Interrupted answers an interrupt met at statement i: the error
	// that ends the command, or nil to stop the write there.
	Interrupted(i int, err error) error
	// Prior answers statement i from its first attempt's record.
	Prior(i int, rec bson.D)
	// Gather groups the statements from i on; nil when statement i runs
	// alone. An error ends the command.
	Gather(i int) (*Group, error)
	// Alone runs statement i by itself.
	Alone(i int) (stop bool, err error)
	// Failed records statement i's failure: whether the write stops, or
	// an error that ends the command.
	Failed(i int, err error) (stop bool, cmdErr error)
}

// Group is the statements from one on that commit together.
type Group struct {
	// commit writes the group: each statement's error (nil: it
	// committed; errAlone: it runs alone) and how many have a result.
	commit committer
	// recs answer the statements a retry found recorded (nil: not).
	recs []bson.D
	// done answers the group's k-th statement, committed.
	done Committed
}

// Committed answers the k-th statement of a group, committed. An
// interface, so that a command's struct answers by a method with no
// closure made for it (a method value stored in the Group would be one).
type Committed interface {
	Committed(k int)
}

// CommittedFunc is a Committed made of a func.
type CommittedFunc func(k int)

// Committed implements Committed.
func (f CommittedFunc) Committed(k int) { f(k) }

// committer commits a Group. An interface, so that a group kept in a
// struct (insertRun) commits by a method with no closure made for it.
type committer interface {
	commit() (errs []error, attempted int)
}

// commitFunc is a committer made of a func.
type commitFunc func() (errs []error, attempted int)

func (f commitFunc) commit() ([]error, int) { return f() }

// errAlone, from a statement of a group, says that the statement cannot
// commit in a group exactly as it would alone (an upsert whose document
// has another _id): it runs alone.
var errAlone = errors.New("writeops: this statement runs alone")

// Run answers statements 0 to n-1; an error ends the command.
func (s *Runner) Run(n int) error {
	s.Txn.Statements(n)
	for i := 0; i < n; {
		if s.EachInterrupt {
			if stop, err := s.interrupt(i); stop {
				return err
			}
		}
		if rec, done, err := s.Txn.Prior(i); err != nil || done {
			if err != nil {
				return err
			}
			s.Stmts.Prior(i, rec)
			i++
			continue
		}
		taken, alone, stop, err := s.group(i)
		if err != nil || stop {
			return err
		}
		if i += taken; taken > 0 && !alone {
			continue
		}
		if stop, err := s.Stmts.Alone(i); err != nil || stop {
			return err
		}
		i++
	}
	return nil
}

// interrupt answers an interrupt of the command met at statement i:
// stop says that the write ends there.
func (s *Runner) interrupt(i int) (stop bool, err error) {
	if err := s.Op.Interrupted(); err != nil {
		return true, s.Stmts.Interrupted(i, err)
	}
	return false, nil
}

// group commits the group from statement i, if any, and answers its
// statements: it returns how many it took; alone says the one after
// them runs alone, stop that the write stops.
func (s *Runner) group(i int) (taken int, alone, stop bool, err error) {
	g, err := s.Stmts.Gather(i)
	if err != nil || g == nil {
		return 0, false, err != nil, err
	}
	if stop, err := s.interrupt(i); stop {
		return 0, false, true, err
	}
	errs, attempted := g.commit.commit()
	for k, err := range errs[:attempted] {
		switch {
		case k < len(g.recs) && g.recs[k] != nil:
			s.Stmts.Prior(i+k, g.recs[k])
		case err == nil:
			g.done.Committed(k)
		case errors.Is(err, errAlone):
			return k, true, false, nil
		default:
			if stop, cmdErr := s.Stmts.Failed(i+k, err); stop || cmdErr != nil {
				return k + 1, false, true, cmdErr
			}
		}
	}
	return attempted, false, false, nil
}

// Recorded returns opt with statement i's retry record added to its
// batch (none when rt is nil); result is called at commit, when the
// statement's outcome is known.
func Recorded(rt *session.Txn, opt docstore.WriteOptions, i int, result func() bson.D) docstore.WriteOptions {
	if rt != nil {
		opt.Extra = rt.Record(i, result)
	}
	return opt
}

// RecordN is the record of a statement that wrote n documents.
func RecordN(n int32) func() bson.D {
	if n == 1 {
		return recordOne // the usual one, made with no closure
	}
	return func() bson.D { return bson.D{{Key: "n", Value: n}} }
}

func recordOne() bson.D { return bson.D{{Key: "n", Value: int32(1)}} }
