package txnrules

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func TestTransactionRefusesWritingAndStreamingStages(t *testing.T) {
	for _, stage := range stagesOutsideTransactions {
		c := cmdargs.Call{Name: "aggregate", Body: bson.D{{Key: "aggregate", Value: "c"},
			{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: stage, Value: bson.D{}}}}}}}
		err := checkPipeline(c)
		if err == nil || mongoerr.As(err).Msg != "Stage not supported inside of a multi-document transaction: "+stage {
			t.Errorf("%s: %v", stage, err)
		}
	}
	c := cmdargs.Call{Name: "aggregate", Body: bson.D{{Key: "pipeline", Value: bson.A{bson.D{{Key: "$group", Value: bson.D{}}}}}}}
	if err := checkPipeline(c); err != nil {
		t.Errorf("$group refused: %v", err)
	}
}

// TestTransactionLabels: mongod's isTransientTransactionError, its
// RetryableWriteError rule for commit and abort, and the commit's
// unknown-outcome rule, by command, code and write concern error.
func TestTransactionLabels(t *testing.T) {
	const tte, rwe, utcr = "TransientTransactionError", "RetryableWriteError", "UnknownTransactionCommitResult"
	cases := []struct {
		cmd    string
		code   mongoerr.Code
		wce    mongoerr.Code // 0: none
		labels []string
	}{
		{"insert", mongoerr.WriteConflict, 0, []string{tte}},
		{"find", mongoerr.NoSuchTransaction, 0, []string{tte}},
		{"update", mongoerr.NotWritablePrimary, 0, []string{tte}},
		{"find", mongoerr.SnapshotTooOld, 0, []string{tte}},
		{"insert", mongoerr.DuplicateKey, 0, nil},
		{"insert", mongoerr.TransactionTooOld, 0, nil},
		{"commitTransaction", mongoerr.NoSuchTransaction, 0, []string{tte}},
		{"commitTransaction", mongoerr.NoSuchTransaction, mongoerr.WriteConcernTimeout, []string{utcr}},
		{"commitTransaction", mongoerr.PreparedTransactionInProgress, 0, []string{tte}},
		{"commitTransaction", mongoerr.SnapshotUnavailable, 0, []string{tte}},
		{"commitTransaction", mongoerr.InterruptedDueToReplStateChange, 0, []string{rwe, utcr}},
		{"commitTransaction", mongoerr.MaxTimeMSExpired, 0, []string{utcr}},
		{"commitTransaction", 0, mongoerr.MaxTimeMSExpired, []string{utcr}},
		{"commitTransaction", 0, mongoerr.UnsatisfiableWriteConcern, nil},
		{"commitTransaction", 0, mongoerr.UnknownReplWriteConcern, nil},
		{"commitTransaction", mongoerr.TransactionCommitted, 0, nil},
		{"abortTransaction", mongoerr.TransactionCommitted, 0, nil},
		{"abortTransaction", mongoerr.NotWritablePrimary, 0, []string{rwe}},
	}
	for _, tc := range cases {
		var err error
		reply := bson.D{}
		if tc.code != 0 {
			err = mongoerr.New(tc.code, "x")
			reply = mongoerr.Reply(err)
		}
		if tc.wce != 0 {
			reply = append(reply, bson.E{Key: "writeConcernError", Value: bson.D{{Key: "code", Value: int32(tc.wce)}}})
		}
		var got []string
		if v, ok := fieldOf(LabelTransaction(tc.cmd, reply, err), "errorLabels"); ok {
			for _, l := range v.(bson.A) {
				got = append(got, l.(string))
			}
		}
		if !slices.Equal(got, tc.labels) {
			t.Errorf("%s, code %d, write concern error %d: labels %q, want %q", tc.cmd, tc.code, tc.wce, got, tc.labels)
		}
	}
}

func fieldOf(d bson.D, key string) (any, bool) {
	for _, e := range d {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}
