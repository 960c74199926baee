package mongoerr

import (
	"errors"
	"strings"
)

// CausedBy returns err with the context prefix mongod puts before an
// error raised while a query runs ("<context> :: caused by :: <msg>"),
// keeping its code and extra fields. An error without a code yet (storage
// and context errors get theirs later), an interruption (time limits,
// killOp, a killed cursor or plan) and one that already carries the
// prefix are returned as they are.
func CausedBy(context string, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Code {
	case MaxTimeMSExpired, Interrupted, CursorKilled, QueryPlanKilled:
		return err
	}
	if strings.HasPrefix(e.Msg, context) {
		return err
	}
	return &Error{Code: e.Code, Msg: context + " :: caused by :: " + e.Msg, Extra: e.Extra}
}
