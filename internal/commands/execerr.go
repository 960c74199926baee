package commands

import (
	"errors"
	"strings"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Error context prefixes mongod puts before an error raised while a
// query runs (not while it is parsed).
const (
	findExecContext      = "Executor error during find command"
	getMoreExecContext   = "Executor error during getMore"
	aggregateExecContext = "PlanExecutor error during aggregation"
	famExecContext       = "Plan executor error during findAndModify"
)

// causedBy returns err with mongod's context prefix, keeping its code and
// extra fields. Errors without a code yet, interruptions (time limits, killOp) are left as they are,
// and so is an error that already carries the prefix.
func causedBy(context string, err error) error {
	var e *mongoerr.Error
	if !errors.As(err, &e) {
		// Storage and context errors get their codes later, at dispatch.
		return err
	}
	switch e.Code {
	case mongoerr.MaxTimeMSExpired, mongoerr.Interrupted, mongoerr.CursorKilled, mongoerr.QueryPlanKilled:
		return err
	}
	if strings.HasPrefix(e.Msg, context) {
		return err
	}
	return &mongoerr.Error{Code: e.Code, Msg: context + " :: caused by :: " + e.Msg, Extra: e.Extra}
}
