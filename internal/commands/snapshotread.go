package commands

import (
	"errors"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/snaphistory"
)

// Snapshot reads outside transactions (docs/design/0015): a find,
// aggregate or distinct with readConcern {level: "snapshot"} reads the
// state applied now and answers its cluster time as atClusterTime; with
// atClusterTime it reads the snapshot an earlier read answered that time
// for, within the history window (minSnapshotHistoryWindowInSeconds).
// A cursor's getMores read the same snapshot: its scans hold its reader.

// snapshotReadCommands are the commands mongod 8.0 runs with read
// concern snapshot outside a transaction.
var snapshotReadCommands = []string{"find", "aggregate", "distinct"}

// snapshotRead is a request's snapshot and the cluster time it is at.
type snapshotRead struct {
	txn *docstore.Txn
	at  bson.Timestamp
}

// reader is the snapshot's read-only transaction, nil for no snapshot.
func (s *snapshotRead) reader() *docstore.Txn {
	if s == nil {
		return nil
	}
	return s.txn
}

// beginSnapshotRead gives a read with read concern snapshot, outside a
// transaction on a replica set member, its snapshot.
func (h *Handler) beginSnapshotRead(r *request) error {
	if r.txn != nil || h.deps.Repl == nil || h.snapshots == nil {
		return nil
	}
	rc, err := optDoc(r, "readConcern")
	if err != nil || rc == nil {
		return err
	}
	if level, _ := bsonutil.Field(rc, "level"); level != "snapshot" {
		return nil
	}
	if err := refuseSnapshotRead(r.name, rc); err != nil {
		return err
	}
	v, ok := bsonutil.Field(rc, "atClusterTime")
	if !ok {
		return h.snapshotAtLatest(r)
	}
	at, ok := v.(bson.Timestamp)
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'atClusterTime' is the wrong type, expected type 'timestamp'")
	}
	return h.snapshotAt(r, at)
}

// refuseSnapshotRead refuses read concern snapshot outside a transaction
// to a command mongod refuses it to.
func refuseSnapshotRead(name string, rc bson.D) error {
	if slices.Contains(snapshotReadCommands, name) {
		return nil
	}
	return readConcernNotSupported(name, rc)
}

// readConcernNotSupported is mongod's refusal of a read concern the
// command does not support.
func readConcernNotSupported(name string, rc bson.D) error {
	return mongoerr.Newf(mongoerr.InvalidOptions, "Command %s does not support %s :: caused by :: read concern not supported", name, readConcernString(rc))
}

// snapshotAtLatest reads the state applied now.
func (h *Handler) snapshotAtLatest(r *request) error {
	txn, ts, err := h.snapshots.Latest(h.appliedTime)
	if errors.Is(err, snaphistory.ErrSnapshotBusy) {
		return mongoerr.New(mongoerr.SnapshotUnavailable, "Unable to read from a snapshot: writes kept applying while it was taken.")
	}
	if err != nil {
		return fmt.Errorf("snapshot read: %w", err)
	}
	r.snapshot = &snapshotRead{txn: txn, at: timestampOf(ts)}
	return nil
}

// snapshotAt reads the snapshot held for at: mongod's refusal of a time
// ahead of the member's, SnapshotTooOld for one the history does not
// hold (older than the window, or never read at).
func (h *Handler) snapshotAt(r *request, at bson.Timestamp) error {
	current := h.appliedTime()
	if packTimestamp(at) > current {
		return mongoerr.Newf(mongoerr.InvalidOptions, "readConcern atClusterTime value must not be greater than the current clusterTime. Requested clusterTime: %s; current clusterTime: %s", timestampString(at), timestampString(timestampOf(current)))
	}
	if txn, ok := h.snapshots.At(packTimestamp(at)); ok {
		r.snapshot = &snapshotRead{txn: txn, at: at}
		return nil
	}
	if packTimestamp(at) == current {
		if err := h.snapshotAtLatest(r); err != nil || r.snapshot.at == at {
			return err
		}
		r.snapshot = nil
	}
	return mongoerr.Newf(mongoerr.SnapshotTooOld, "Read timestamp %s is older than the oldest available timestamp.", timestampString(at))
}

// appliedTime is the cluster time of the last entry this member applied.
func (h *Handler) appliedTime() uint64 {
	ts, _, _ := h.deps.Repl.OpTime()
	return packTimestamp(bson.Timestamp{T: ts.T, I: ts.I})
}

// withAtClusterTime gives a snapshot read's reply its atClusterTime, in
// the cursor (find, aggregate) or at the top (distinct), as mongod's.
func withAtClusterTime(r *request, reply bson.D) bson.D {
	if r.snapshot == nil {
		return reply
	}
	for i, e := range reply {
		if cur, ok := e.Value.(bson.D); ok && e.Key == "cursor" {
			reply[i].Value = append(cur, bson.E{Key: "atClusterTime", Value: r.snapshot.at})
			return reply
		}
	}
	return append(reply, bson.E{Key: "atClusterTime", Value: r.snapshot.at})
}

func packTimestamp(ts bson.Timestamp) uint64 { return uint64(ts.T)<<32 | uint64(ts.I) }

func timestampOf(packed uint64) bson.Timestamp {
	return bson.Timestamp{T: uint32(packed >> 32), I: uint32(packed)}
}

// timestampString is mongod's Timestamp::toString.
func timestampString(ts bson.Timestamp) string {
	return fmt.Sprintf("Timestamp(%d, %d)", ts.T, ts.I)
}

// readConcernString is mongod's ReadConcernArgs::toString of a client's
// read concern.
func readConcernString(rc bson.D) string {
	s := "{ readConcern: { "
	if level, ok := bsonutil.Field(rc, "level"); ok {
		s += fmt.Sprintf("level: %q, ", level)
	}
	if at, ok := bsonutil.Field(rc, "atClusterTime"); ok {
		if ts, ok := at.(bson.Timestamp); ok {
			s += "atClusterTime: " + timestampString(ts) + ", "
		}
	}
	return s + `provenance: "clientSupplied" } }`
}
