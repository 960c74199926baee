package changestream

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// resumable reports whether a driver may resume a change stream after an
// error with code: mongod labels these ResumableChangeStreamError.
func resumable(code mongoerr.Code) bool {
	switch code {
	case mongoerr.HostUnreachable, mongoerr.HostNotFound, mongoerr.NetworkTimeout,
		mongoerr.ShutdownInProgress, mongoerr.PrimarySteppedDown, mongoerr.ExceededTimeLimit,
		mongoerr.SocketException, mongoerr.NotWritablePrimary, mongoerr.InterruptedAtShutdown,
		mongoerr.InterruptedDueToReplStateChange, mongoerr.NotPrimaryNoSecondaryOk,
		mongoerr.NotPrimaryOrSecondary, mongoerr.StaleEpoch,
		mongoerr.StaleConfig, mongoerr.RetryChangeStream, mongoerr.FailedToSatisfyReadPreference:
		return true
	}
	return false
}

// ResumableError adds the ResumableChangeStreamError label to an error a
// driver may resume a stream after; other errors are returned as they are.
func ResumableError(err error) error {
	var me *mongoerr.Error
	if !errors.As(err, &me) || !resumable(me.Code) {
		return err
	}
	labeled := *me
	labeled.Extra = append(append([]mongoerr.KV(nil), me.Extra...), mongoerr.KV{Key: "errorLabels", Value: bson.A{"ResumableChangeStreamError"}})
	return &labeled
}
