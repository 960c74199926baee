package session

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/mayflydb/mayfly/internal/storage"
)

// A transaction's commit record. Beside the retryable-write records,
// under the same tag, each session keeps the number of its last
// committed transaction, written in the commit's own batch:
//
//	's' len(sessionID) sessionID 0x02 → txnNumber(8) commitMillis(8)
//
// It replicates with the commit, so a retried commitTransaction whose
// first attempt's outcome was unknown finds it on whichever member is
// primary next: committed, it answers ok; absent, the transaction did
// not commit. Sweep drops it once older than Lifetime.
const kindCommitted = 0x02

func commitKey(lsid []byte) []byte {
	k := append([]byte{tagSession, byte(len(lsid))}, lsid...)
	return append(k, kindCommitted)
}

// RecordCommit returns the write that records, in the commit's batch,
// that the session's transaction txn committed at now.
func RecordCommit(lsid []byte, txn int64, now time.Time) func(storage.Batch) error {
	return func(b storage.Batch) error {
		if len(lsid) > MaxLSID {
			return fmt.Errorf("session: lsid of %d bytes, longer than %d", len(lsid), MaxLSID)
		}
		v := binary.BigEndian.AppendUint64(nil, uint64(txn))
		v = binary.BigEndian.AppendUint64(v, uint64(now.UnixMilli()))
		return b.Set(commitKey(lsid), v)
	}
}

// CommittedTxn reports whether the session's transaction txn committed,
// by its commit record in r.
func CommittedTxn(r storage.Reader, lsid []byte, txn int64) (bool, error) {
	v, err := r.Get(commitKey(lsid))
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil || len(v) != 16 {
		return false, fmt.Errorf("session: read commit record (%d bytes): %w", len(v), err)
	}
	return int64(binary.BigEndian.Uint64(v)) == txn, nil
}

// staleCommit reports whether k, v is a commit record older than cutoff.
func staleCommit(k, v []byte, cutoff time.Time) bool {
	return len(k) >= 2 && len(k) == 3+int(k[1]) && k[len(k)-1] == kindCommitted && len(v) == 16 &&
		int64(binary.BigEndian.Uint64(v[8:])) < cutoff.UnixMilli()
}
