package failpoint

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// OnPrimaryTransactionalWrite is the fail point a retryable write meets
// on the primary as its statements are about to commit, with their
// records: the drivers' retryable-write tests use it to lose the reply of
// a write that committed, or to fail one that must not.
const OnPrimaryTransactionalWrite = "onPrimaryTransactionalWrite"

// TransactionalWriteFailure is onPrimaryTransactionalWrite's data, read as
// mongod reads it.
type TransactionalWriteFailure struct {
	// CloseConnection (default true) drops the connection without a reply.
	CloseConnection bool
	// FailCode, when HasFailCode, fails the write before it commits.
	FailCode    mongoerr.Code
	HasFailCode bool
}

// ReadTransactionalWriteFailure reads onPrimaryTransactionalWrite's data.
func ReadTransactionalWriteFailure(data bson.D) TransactionalWriteFailure {
	f := TransactionalWriteFailure{CloseConnection: true}
	if v, ok := bsonutil.Lookup(data, "closeConnection"); ok {
		f.CloseConnection, _ = v.(bool)
	}
	if n, err := IntegerField(data, "failBeforeCommitExceptionCode"); err == nil {
		f.FailCode, f.HasFailCode = mongoerr.Code(n), true
	}
	return f
}

// Error is the error of a write failed before its commit; session names
// the write's logical session.
func (f TransactionalWriteFailure) Error(session string, txnNumber int64) *mongoerr.Error {
	return mongoerr.Newf(f.FailCode, "Failing write for %s:%d due to failpoint. The write must not be reflected.", session, txnNumber)
}
