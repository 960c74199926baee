package failpoint

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// The command layer's questions to its fail points, each answered by
// evaluating one point against its own data format.

// CommandFailure evaluates failCommand for call: the failure when one
// applies to call and acts accepts it (acts tells the points consulted
// before a command from those consulted after it).
func (r *Registry) CommandFailure(call Call, acts func(CommandFailure) bool) (CommandFailure, bool) {
	data, ok := r.Point(FailCommand).Evaluate(func(data bson.D) bool {
		f := ReadCommandFailure(data)
		return f.Applies(call) && acts(f)
	})
	if !ok {
		return CommandFailure{}, false
	}
	return ReadCommandFailure(data), true
}

// GetMoreFailure evaluates failGetMoreAfterCursorCheckout for call, a
// getMore that has checked out its cursor: the error to fail it with.
func (r *Registry) GetMoreFailure(call Call) (*mongoerr.Error, bool) {
	data, ok := r.Point(FailGetMore).Evaluate(func(data bson.D) bool {
		return ReadGetMoreFailure(data).Applies(call)
	})
	if !ok {
		return nil, false
	}
	return ReadGetMoreFailure(data).GetMoreError(), true
}

// TransactionalWriteFailure evaluates onPrimaryTransactionalWrite, as a
// statement of a retryable write is about to commit.
func (r *Registry) TransactionalWriteFailure() (TransactionalWriteFailure, bool) {
	data, ok := r.Point(OnPrimaryTransactionalWrite).Evaluate(func(bson.D) bool { return true })
	if !ok {
		return TransactionalWriteFailure{}, false
	}
	return ReadTransactionalWriteFailure(data), true
}
