package session

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage"
)

// Retryable writes on a replica set member. A write that carries lsid and
// txnNumber records, in the same atomic batch as each statement's effect,
// that the statement ran and what it returned; the record replicates with
// the write, so a retry on whichever member is primary next finds it and
// answers the first attempt's result instead of writing again.
//
// Records live under the tag 's':
//
//	's' len(sessionID) sessionID 0x00                    → txnNumber(8) lastWriteMillis(8) firstStmt(4) lastStmt(4)
//	's' len(sessionID) sessionID 0x01 txnNumber(8) stmt(4) → the statement's result (BSON)
//
// A session's records of older txnNumbers are deleted when a newer one
// writes, key by key over the statement range its head records (a range
// deletion per write would leave a range tombstone in the memtable that
// every new iterator then fragments again), and a session's records all
// go once it has not written for Lifetime (Sweep, on the primary).
const tagSession = byte(keyspace.Session)

// Write names one retryable write command.
type Write struct {
	Engine storage.Engine
	// LSID is the session's lsid.id, followed by lsid.uid when present.
	LSID []byte
	// Label names the session in errors: lsid.id in hex.
	Label string
	Txn   int64
	// StmtIDs are the command's stmtIds; without them statement i is i.
	StmtIDs []int32
	Now     func() time.Time
	// BeforeCommit, when set, runs as each statement's record joins its
	// batch; its error fails the batch (a test fail point's hook).
	BeforeCommit func() error
}

// Txn is one retryable write command's session and txnNumber.
type Txn struct {
	eng     storage.Engine
	session []byte // the key prefix: tag, length, LSID
	txn     int64
	stmtIDs []int32
	newer   bool      // the command's txnNumber had no records when it began: nothing to look up
	stmts   stmtRange // statements recorded for txn, by every attempt
	prev    *head     // the head a newer txn replaces, if any
	retried bson.A    // the statement ids answered from records
	label   string
	now     func() time.Time
	before  func() error // Write.BeforeCommit
}

// MaxLSID is the longest LSID the key layout holds (its length is one
// byte).
const MaxLSID = 255

// Begin returns the retry state of w. It refuses a txnNumber older than
// the session's last one, as mongod does (TransactionTooOld).
func Begin(w Write) (*Txn, error) {
	if len(w.LSID) > MaxLSID {
		return nil, fmt.Errorf("session: lsid of %d bytes, longer than %d", len(w.LSID), MaxLSID)
	}
	t := &Txn{
		eng: w.Engine, session: append([]byte{tagSession, byte(len(w.LSID))}, w.LSID...),
		txn: w.Txn, stmtIDs: w.StmtIDs, label: w.Label, now: w.Now, before: w.BeforeCommit,
	}
	return t, t.checkOrder()
}

// stmtRange is the first and last statement IDs a txnNumber recorded.
type stmtRange struct {
	first, last int32
	any         bool
}

func (r *stmtRange) add(id int32) {
	if !r.any {
		*r = stmtRange{first: id, last: id, any: true}
		return
	}
	r.first, r.last = min(r.first, id), max(r.last, id)
}

// head is a session's head record.
type head struct {
	txn   int64
	stmts stmtRange // unknown (any false) in a head written without it
}

func decodeHead(raw []byte) (head, bool) {
	if len(raw) != 16 && len(raw) != 24 {
		return head{}, false
	}
	h := head{txn: int64(binary.BigEndian.Uint64(raw))}
	if len(raw) == 24 {
		h.stmts = stmtRange{first: int32(binary.BigEndian.Uint32(raw[16:])), last: int32(binary.BigEndian.Uint32(raw[20:])), any: true}
	}
	return h, true
}

// checkOrder refuses a txnNumber older than the session's last one.
func (t *Txn) checkOrder() error {
	raw, err := t.eng.Get(t.sessionPrefix(0))
	if errors.Is(err, storage.ErrNotFound) {
		t.newer = true
		return nil
	}
	h, ok := decodeHead(raw)
	if err != nil || !ok {
		return fmt.Errorf("session: read session record (%d bytes): %w", len(raw), err)
	}
	switch {
	case h.txn > t.txn:
		return mongoerr.Newf(mongoerr.TransactionTooOld, "Retryable write with txnNumber %d is prohibited on session %s because a newer retryable write with txnNumber %d has already started on this session.", t.txn, t.label, h.txn)
	case h.txn < t.txn:
		t.newer, t.prev = true, &h
	default:
		t.stmts = h.stmts // a retry: keep the first attempt's range
	}
	return nil
}

// maxPointDeletes bounds the statement records deleted key by key; a
// larger (or unknown) range is deleted as a range.
const maxPointDeletes = 4096

// dropPrevious deletes the records of the txnNumber this one replaces.
func (t *Txn) dropPrevious(b storage.Batch) error {
	p := t.prev
	if p == nil {
		return nil
	}
	if !p.stmts.any || int64(p.stmts.last)-int64(p.stmts.first) >= maxPointDeletes {
		return b.DeleteRange(t.sessionPrefix(1), t.sessionPrefix(2))
	}
	for id := int64(p.stmts.first); id <= int64(p.stmts.last); id++ {
		if err := b.Delete(t.stmtKeyOf(p.txn, int32(id))); err != nil {
			return err
		}
	}
	return nil
}

func (t *Txn) sessionPrefix(kind byte) []byte {
	return append(append([]byte(nil), t.session...), kind)
}

func (t *Txn) stmtKey(stmt int32) []byte { return t.stmtKeyOf(t.txn, stmt) }

func (t *Txn) stmtKeyOf(txn int64, stmt int32) []byte {
	k := binary.BigEndian.AppendUint64(t.sessionPrefix(1), uint64(txn))
	return binary.BigEndian.AppendUint32(k, uint32(stmt))
}

func (t *Txn) stmtID(i int) int32 {
	if i < len(t.stmtIDs) {
		return t.stmtIDs[i]
	}
	return int32(i)
}

// Retry says that the command retries a txnNumber that recorded
// statements before: each statement must then be looked up (Prior) before
// it runs, so none runs in a group. A nil Txn (no retryable write) is no
// retry.
func (t *Txn) Retry() bool { return t != nil && !t.newer }

// Prior returns the recorded result of statement i if it already ran, and
// notes it among the retried statements.
func (t *Txn) Prior(i int) (bson.D, bool, error) {
	if t == nil || t.newer {
		return nil, false, nil
	}
	raw, err := t.eng.Get(t.stmtKey(t.stmtID(i)))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("session: read statement record: %w", err)
	}
	var d bson.D
	if err := bson.Unmarshal(raw, &d); err != nil {
		return nil, false, fmt.Errorf("session: decode statement record: %w", err)
	}
	t.retried = append(t.retried, t.stmtID(i))
	return d, true, nil
}

// Record returns the writes that record statement i into the batch that
// commits its effect; result is called then, when the statement's outcome
// is known. A nil Txn records nothing (nil).
func (t *Txn) Record(i int, result func() bson.D) func(storage.Batch) error {
	if t == nil {
		return nil
	}
	return func(b storage.Batch) error {
		if t.before != nil {
			if err := t.before(); err != nil {
				return err
			}
		}
		raw, err := bson.Marshal(result())
		if err != nil {
			return fmt.Errorf("session: encode statement record: %w", err)
		}
		if t.prev != nil {
			// Older txnNumbers' records go; this is now the session's.
			if err := t.dropPrevious(b); err != nil {
				return err
			}
			t.prev = nil
		}
		t.stmts.add(t.stmtID(i))
		h := binary.BigEndian.AppendUint64(nil, uint64(t.txn))
		h = binary.BigEndian.AppendUint64(h, uint64(t.now().UnixMilli()))
		h = binary.BigEndian.AppendUint32(h, uint32(t.stmts.first))
		h = binary.BigEndian.AppendUint32(h, uint32(t.stmts.last))
		if err := b.Set(t.sessionPrefix(0), h); err != nil {
			return err
		}
		return b.Set(t.stmtKey(t.stmtID(i)), raw)
	}
}

// Retried are the ids of the statements Prior answered from records, for
// the reply's retriedStmtIds (none: nil).
func (t *Txn) Retried() bson.A {
	if t == nil {
		return nil
	}
	return t.retried
}

// Sweep deletes the records of sessions that have not written for
// Lifetime, through eng (on a replica set, the primary's writes
// replicate the deletion). It returns how many sessions it removed.
func Sweep(eng storage.Engine, now time.Time) (int, error) {
	stale, commits, err := staleSessions(eng, now.Add(-Lifetime))
	if err != nil || len(stale)+len(commits) == 0 {
		return 0, err
	}
	b := eng.NewBatch()
	defer b.Close()
	for _, p := range stale {
		if err := b.DeleteRange(p, append(append([]byte(nil), p...), 0xff)); err != nil {
			return 0, err
		}
	}
	for _, k := range commits {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(stale), b.Commit(false)
}

// staleSessions lists the key prefixes of sessions last written before
// cutoff, and the transaction commit records older than it.
func staleSessions(eng storage.Engine, cutoff time.Time) (stale, commits [][]byte, err error) {
	it, err := eng.NewIter([]byte{tagSession}, []byte{tagSession + 1})
	if err != nil {
		return nil, nil, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		if staleCommit(k, v, cutoff) {
			commits = append(commits, append([]byte(nil), k...))
			continue
		}
		if len(k) < 2 || len(k) != 3+int(k[1]) || k[len(k)-1] != 0 || (len(v) != 16 && len(v) != 24) {
			continue // a statement record, or not a session's head
		}
		if int64(binary.BigEndian.Uint64(v[8:])) < cutoff.UnixMilli() {
			stale = append(stale, append([]byte(nil), k[:len(k)-1]...))
		}
	}
	return stale, commits, it.Error()
}
