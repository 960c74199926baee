package failpoint

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// FailGetMore is the fail point that fails a getMore once its cursor is
// checked out: later than failCommand, so the error goes through what a
// cursor's own error goes through (a change stream's is labelled
// resumable), which is why drivers' change stream tests use it.
const FailGetMore = "failGetMoreAfterCursorCheckout"

// Names are the fail points a server has, as mongod's registry is fixed
// at start.
func Names() []string {
	return append([]string{FailCommand, FailGetMore, OnPrimaryTransactionalWrite, IndexBuildHangAfterInsertion}, MigrationNames()...)
}

// ReadGetMoreFailure reads failGetMoreAfterCursorCheckout's data as
// mongod does: as failCommand's, failing getMore alone.
func ReadGetMoreFailure(data bson.D) CommandFailure {
	f := ReadCommandFailure(data)
	f.Commands = []string{"getMore"}
	return f
}

// GetMoreError is the error the getMore fails with: errorCode, or
// InternalError without one. Only the code is taken from the data: labels
// come from the cursor, as for any error it meets.
func (f CommandFailure) GetMoreError() *mongoerr.Error {
	code := mongoerr.InternalError
	if f.HasErrorCode {
		code = f.ErrorCode
	}
	return mongoerr.New(code, "Hit the 'failGetMoreAfterCursorCheckout' failpoint")
}
