package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// labelTransaction adds the labels drivers act on to a transaction
// statement's error reply, by mongod's rules (error_labels.cpp):
// TransientTransactionError when the whole transaction may be retried,
// else RetryableWriteError on a commit or abort that may be retried;
// and UnknownTransactionCommitResult on a commit whose outcome is not
// known (a retriable error, an expired maxTimeMS, an outcome this
// member did not see, or a write concern error other than one no retry
// can satisfy).
func labelTransaction(r *request, reply bson.D, err error) bson.D {
	if r.txn == nil && !isTransactionStatement(r) {
		return reply
	}
	if _, labelled := bsonutil.Field(reply, "errorLabels"); labelled {
		return reply
	}
	code := txnReplyCode(reply)
	wcCode, hasWC := writeConcernErrorCode(reply)
	commitOrAbort := r.name == "commitTransaction" || r.name == "abortTransaction"
	var labels bson.A
	switch {
	case code != 0 && transientTransactionError(code, hasWC, commitOrAbort):
		labels = append(labels, "TransientTransactionError")
	case commitOrAbort && (code.IsRetriableError() || wcCode.IsRetriableError()):
		labels = append(labels, "RetryableWriteError")
	}
	if r.name == "commitTransaction" && unknownCommitResult(code, wcCode, hasWC, err) {
		labels = append(labels, "UnknownTransactionCommitResult")
	}
	if len(labels) == 0 {
		return reply
	}
	return append(reply, bson.E{Key: "errorLabels", Value: labels})
}

// transientTransactionError is mongod's isTransientTransactionError: an
// error after which the transaction left nothing behind. A commit or
// abort's NoSuchTransaction is one only without a write concern error,
// since otherwise the data may yet roll back.
func transientTransactionError(code mongoerr.Code, hasWriteConcernError, commitOrAbort bool) bool {
	switch {
	case code == mongoerr.WriteConflict, code == mongoerr.LockTimeout,
		code == mongoerr.PreparedTransactionInProgress, code.IsSnapshotError():
		return true
	case commitOrAbort:
		return code == mongoerr.NoSuchTransaction && !hasWriteConcernError
	}
	return code.IsRetriableError() || code == mongoerr.NoSuchTransaction
}

// unknownCommitResult reports whether a commit's reply leaves its outcome
// unknown, so that retrying the commit is what a driver should do.
func unknownCommitResult(code, wcCode mongoerr.Code, hasWC bool, err error) bool {
	if code.IsRetriableError() || commitOutcomeUnknown(err) || code == mongoerr.MaxTimeMSExpired {
		return true
	}
	return hasWC && wcCode != mongoerr.UnsatisfiableWriteConcern && wcCode != mongoerr.UnknownReplWriteConcern
}

func txnReplyCode(reply bson.D) mongoerr.Code {
	v, _ := bsonutil.Field(reply, "code")
	c, _ := v.(int32)
	return mongoerr.Code(c)
}

// writeConcernErrorCode is the code of a reply's writeConcernError.
func writeConcernErrorCode(reply bson.D) (mongoerr.Code, bool) {
	v, ok := bsonutil.Field(reply, "writeConcernError")
	if !ok {
		return 0, false
	}
	wce, _ := v.(bson.D)
	c, _ := bsonutil.Field(wce, "code")
	n, _ := c.(int32)
	return mongoerr.Code(n), true
}
