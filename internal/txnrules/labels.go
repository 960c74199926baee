package txnrules

import (
	"errors"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/repl"
)

// LabelTransaction adds the labels drivers act on to the error reply of
// a transaction's statement, command name, by mongod's rules
// (error_labels.cpp): TransientTransactionError when the whole
// transaction may be retried, else RetryableWriteError on a commit or
// abort that may be retried; and UnknownTransactionCommitResult on a
// commit whose outcome is not known (a retriable error, an expired
// maxTimeMS, an outcome this member did not see, or a write concern
// error other than one no retry can satisfy). Labels already in the
// reply (a fail point's) are kept as they are.
func LabelTransaction(name string, reply bson.D, err error) bson.D {
	if _, labelled := bsonutil.Field(reply, "errorLabels"); labelled {
		return reply
	}
	code := replyCode(reply)
	wcCode, hasWC := writeConcernErrorCode(reply)
	commitOrAbort := name == "commitTransaction" || name == "abortTransaction"
	var labels bson.A
	switch {
	case code != 0 && transientTransactionError(code, hasWC, commitOrAbort):
		labels = append(labels, "TransientTransactionError")
	case commitOrAbort && (code.IsRetriableError() || wcCode.IsRetriableError()):
		labels = append(labels, "RetryableWriteError")
	}
	if name == "commitTransaction" && unknownCommitResult(code, wcCode, hasWC, err) {
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
	if code.IsRetriableError() || CommitOutcomeUnknown(err) || code == mongoerr.MaxTimeMSExpired {
		return true
	}
	return hasWC && wcCode != mongoerr.UnsatisfiableWriteConcern && wcCode != mongoerr.UnknownReplWriteConcern
}

// CommitOutcomeUnknown reports whether a failed commit may still have
// committed: its entry was proposed and its fate was not seen (lost
// leadership, a timeout). A conflict or a refusal before proposing is
// certain.
func CommitOutcomeUnknown(err error) bool {
	if err == nil {
		return false
	}
	var me *mongoerr.Error
	if errors.As(err, &me) {
		return false
	}
	return !errors.Is(err, repl.ErrNotPrimary)
}

func replyCode(reply bson.D) mongoerr.Code {
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

// RetryableWrites are the commands mongod retries as retryable writes
// (and labels RetryableWriteError): the document writes whose replies
// drivers inspect most closely.
func RetryableWrites() []string {
	return []string{"insert", "update", "delete", "findAndModify", "bulkWrite"}
}

// LabelRetryable adds errorLabels to the reply of a retryable write (a
// command of RetryableWrites, by its own name, with a txnNumber) whose
// error, or write concern error, is retryable; labels already in the
// reply (a fail point's) are kept as they are.
func LabelRetryable(name string, body, reply bson.D) bson.D {
	if _, ok := bsonutil.Field(body, "txnNumber"); !ok || !slices.Contains(RetryableWrites(), name) {
		return reply
	}
	if _, labelled := bsonutil.Field(reply, "errorLabels"); labelled {
		return reply
	}
	code, _ := bsonutil.Field(reply, "code")
	if wce, ok := bsonutil.Field(reply, "writeConcernError"); ok {
		wcDoc, _ := wce.(bson.D)
		code, _ = bsonutil.Field(wcDoc, "code")
	}
	if c, ok := code.(int32); !ok || !mongoerr.Code(c).IsRetriableError() {
		return reply
	}
	return append(reply, bson.E{Key: "errorLabels", Value: bson.A{"RetryableWriteError"}})
}

// FirstWriteError is the first of a write reply's writeErrors, nil when
// it has none.
func FirstWriteError(reply bson.D) error {
	v, _ := bsonutil.Field(reply, "writeErrors")
	errs, _ := v.(bson.A)
	if len(errs) == 0 {
		return nil
	}
	first, _ := errs[0].(bson.D)
	code, _ := bsonutil.Field(first, "code")
	msg, _ := bsonutil.Field(first, "errmsg")
	c, _ := code.(int32)
	s, _ := msg.(string)
	return mongoerr.New(mongoerr.Code(c), s)
}
