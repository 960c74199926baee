package txnrules

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/activity"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/session"
)

// How currentOp and serverStatus report transactions, in mongod 8.0's
// shape (TransactionParticipant's reportUnstashedState for a statement
// running, reportStashedState for an idle session).

// TransactionDoc is currentOp's transaction sub-document.
func TransactionDoc(rep session.TxnReport) bson.D {
	return bson.D{
		{Key: "parameters", Value: bson.D{
			{Key: "txnNumber", Value: rep.Number},
			{Key: "autocommit", Value: false},
			{Key: "readConcern", Value: reportedReadConcern(rep.ReadConcern)},
		}},
		// ReadTimestamp packs a cluster time's seconds over its increment.
		{Key: "readTimestamp", Value: bson.Timestamp{T: uint32(rep.ReadTimestamp >> 32), I: uint32(rep.ReadTimestamp)}},
		{Key: "startWallClockTime", Value: activity.ISOTime(rep.Started)},
		{Key: "timeOpenMicros", Value: rep.Open.Microseconds()},
		{Key: "timeActiveMicros", Value: rep.Active.Microseconds()},
		// From the rounded figures, so that open = active + inactive.
		{Key: "timeInactiveMicros", Value: rep.Open.Microseconds() - rep.Active.Microseconds()},
		{Key: "expiryTime", Value: activity.ISOTime(rep.Expires)},
	}
}

// reportedReadConcern is the read concern mongod reports: the
// client's level, or the implicit default (local) when it gave none.
func reportedReadConcern(level string) bson.D {
	if level == "" {
		return bson.D{{Key: "level", Value: "local"}, {Key: "provenance", Value: "implicitDefault"}}
	}
	return bson.D{{Key: "level", Value: level}, {Key: "provenance", Value: "clientSupplied"}}
}

// IdleSessionDoc is a transaction in progress with no statement running,
// as $currentOp's idleSessions shows it.
func IdleSessionDoc(rep session.TxnReport, host string) bson.D {
	var lsid bson.D
	_ = bson.Unmarshal(rep.Client.LSID, &lsid)
	return bson.D{
		{Key: "type", Value: "idleSession"},
		{Key: "host", Value: host},
		{Key: "desc", Value: "inactive transaction"},
		{Key: "client", Value: rep.Client.Addr},
		{Key: "connectionId", Value: rep.Client.ConnID},
		{Key: "appName", Value: ""},
		{Key: "clientMetadata", Value: bson.D{}},
		{Key: "lsid", Value: lsid},
		{Key: "transaction", Value: TransactionDoc(rep)},
		{Key: "waitingForLock", Value: false},
		{Key: "active", Value: false},
		{Key: "locks", Value: bson.D{}},
	}
}

// WantsIdleSessions reads $currentOp's idleSessions option (default
// true, as mongod's).
func WantsIdleSessions(spec any) bool {
	d, _ := spec.(bson.D)
	v, ok := bsonutil.Field(d, "idleSessions")
	if !ok {
		return true
	}
	b, isBool := v.(bool)
	return !isBool || b
}

// Status is serverStatus's transactions section.
func Status(s session.TxnStats) bson.D {
	return bson.D{
		{Key: "currentActive", Value: s.CurrentActive},
		{Key: "currentInactive", Value: s.CurrentInactive},
		{Key: "currentOpen", Value: s.CurrentOpen},
		{Key: "totalAborted", Value: s.TotalAborted},
		{Key: "totalCommitted", Value: s.TotalCommitted},
		{Key: "totalStarted", Value: s.TotalStarted},
	}
}
