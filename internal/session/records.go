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
//	's' len(sessionID) sessionID 0x00                    → txnNumber(8) lastWriteMillis(8) firstStmt(4) lastStmt(4) [stmt(4) result(BSON)]
//	's' len(sessionID) sessionID 0x01 txnNumber(8) stmt(4) → the statement's result (BSON)
//	's' len(sessionID) sessionID 0x03                    → as 0x00, for records a chunk migration brought
//	's' len(sessionID) sessionID 0x04 txnNumber(8) stmt(4) → as 0x01, for records a chunk migration brought
//
// A command of one statement (a session store's touch, a findAndModify)
// keeps its statement's result in the head, after the statement range,
// instead of in a record of its own: its batch then overwrites one
// session key, where it wrote a statement record and deleted the
// previous txnNumber's as well. On a replica set, three of a touch's
// five writes were session records; one is left. A command of several
// statements records each in its own key, because a statement whose
// batch fails must leave no record, and the head is rewritten by every
// statement's batch. A result over maxInline bytes also has its own.
//
// A shard that receives a chunk receives the donor's records with it
// (migrated.go), so that a retry the router sends to the new owner
// answers the first attempt's result. They are kept apart from the
// member's own, written only by the migration, so that installing them
// never races with the session's writes here: a retry looks in both.
//
// A session's records of older txnNumbers are deleted when a newer one
// writes, key by key over the statement range its head records (a range
// deletion per write would leave a range tombstone in the memtable that
// every new iterator then fragments again), and a session's records all
// go once it has not written for Lifetime (Sweep, on the primary).
const tagSession = byte(keyspace.Session)

// The kinds of a session's records: the byte after the session id.
const (
	kindHead         = 0x00
	kindStmt         = 0x01
	kindMigratedHead = 0x03
	kindMigratedStmt = 0x04
)

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
	// Migrated says the member may hold records a chunk migration
	// brought (a shard's member): a retry looks there too.
	Migrated bool
}

// Txn is one retryable write command's session and txnNumber.
type Txn struct {
	eng     storage.Engine
	session []byte // the key prefix: tag, length, LSID
	txn     int64
	stmtIDs []int32
	// lookLocal and lookMigrated say where statements of txn were
	// recorded when the command began: this member's records, a
	// migration's. Neither: nothing to look up.
	lookLocal, lookMigrated bool
	migrated                bool        // Write.Migrated
	single                  bool        // the command has one statement (Statements)
	inline                  *inlineStmt // the statement the stored head of txn holds, on a retry
	stmts                   stmtRange   // statements recorded for txn here, by every attempt
	prev                    *head       // the head a newer txn replaces, if any
	retried                 bson.A      // the statement ids answered from records
	label                   string
	now                     func() time.Time
	before                  func() error // Write.BeforeCommit
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
		txn: w.Txn, stmtIDs: w.StmtIDs, label: w.Label, now: w.Now, before: w.BeforeCommit, migrated: w.Migrated,
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
	txn    int64
	stmts  stmtRange   // unknown (any false) in a head written without it
	inline *inlineStmt // the statement recorded in the head, if any
}

// inlineStmt is a statement's result kept in its session's head.
type inlineStmt struct {
	id     int32
	result []byte // BSON
}

// The lengths of a head: the txnNumber and last write; with the
// statement range; with a statement after it (its id and a BSON
// document of at least 5 bytes).
const (
	headLen       = 16
	headRangeLen  = 24
	headInlineMin = headRangeLen + 4 + 5
)

func decodeHead(raw []byte) (head, bool) {
	if len(raw) != headLen && len(raw) != headRangeLen && len(raw) < headInlineMin {
		return head{}, false
	}
	h := head{txn: int64(binary.BigEndian.Uint64(raw))}
	if len(raw) >= headRangeLen {
		h.stmts = stmtRange{first: int32(binary.BigEndian.Uint32(raw[16:])), last: int32(binary.BigEndian.Uint32(raw[20:])), any: true}
	}
	if len(raw) >= headInlineMin {
		h.inline = &inlineStmt{id: int32(binary.BigEndian.Uint32(raw[headRangeLen:])), result: raw[headRangeLen+4:]}
	}
	return h, true
}

// encodeHead is the head record of txn, last written at lastWrite.
func encodeHead(txn int64, lastWrite time.Time, stmts stmtRange, inline *inlineStmt) []byte {
	n := headRangeLen
	if inline != nil {
		n += 4 + len(inline.result)
	}
	h := make([]byte, 0, n)
	h = binary.BigEndian.AppendUint64(h, uint64(txn))
	h = binary.BigEndian.AppendUint64(h, uint64(lastWrite.UnixMilli()))
	h = binary.BigEndian.AppendUint32(h, uint32(stmts.first))
	h = binary.BigEndian.AppendUint32(h, uint32(stmts.last))
	if inline != nil {
		h = binary.BigEndian.AppendUint32(h, uint32(inline.id))
		h = append(h, inline.result...)
	}
	return h
}

// checkOrder refuses a txnNumber older than the session's last one,
// here or in the records a migration brought, and notes where a retry's
// statements may be recorded.
func (t *Txn) checkOrder() error {
	local, hasLocal, err := t.readHead(kindHead)
	if err != nil {
		return err
	}
	var moved head
	var hasMoved bool
	if t.migrated {
		if moved, hasMoved, err = t.readHead(kindMigratedHead); err != nil {
			return err
		}
	}
	for _, h := range []struct {
		head
		ok bool
	}{{local, hasLocal}, {moved, hasMoved}} {
		if h.ok && h.txn > t.txn {
			return mongoerr.Newf(mongoerr.TransactionTooOld, "Retryable write with txnNumber %d is prohibited on session %s because a newer retryable write with txnNumber %d has already started on this session.", t.txn, t.label, h.txn)
		}
	}
	switch {
	case hasLocal && local.txn == t.txn:
		// A retry: keep the first attempt's range and inline statement.
		t.lookLocal, t.stmts, t.inline = true, local.stmts, local.inline
	case hasLocal:
		t.prev = &local
	}
	t.lookMigrated = hasMoved && moved.txn == t.txn
	return nil
}

// readHead reads the session's head record of kind (this member's or a
// migration's); ok is false when there is none.
func (t *Txn) readHead(kind byte) (h head, ok bool, err error) {
	raw, err := t.eng.Get(t.sessionPrefix(kind))
	if errors.Is(err, storage.ErrNotFound) {
		return head{}, false, nil
	}
	h, ok = decodeHead(raw)
	if err != nil || !ok {
		return head{}, false, fmt.Errorf("session: read session record (%d bytes): %w", len(raw), err)
	}
	return h, true, nil
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
		return b.DeleteRange(t.sessionPrefix(kindStmt), t.sessionPrefix(kindStmt+1))
	}
	for id := int64(p.stmts.first); id <= int64(p.stmts.last); id++ {
		if p.inline != nil && int64(p.inline.id) == id {
			continue // in the head, which this write overwrites
		}
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
	return stmtKeyIn(t.session, kindStmt, txn, stmt)
}

// stmtSuffixLen is what a statement record's key has after the session
// id: its kind, txnNumber and statement id.
const stmtSuffixLen = 1 + 8 + 4

// stmtKeyIn is the key of statement stmt of txn among the session's
// records of kind (kindStmt or kindMigratedStmt); session is the
// session's key prefix.
func stmtKeyIn(session []byte, kind byte, txn int64, stmt int32) []byte {
	k := append(append(make([]byte, 0, len(session)+stmtSuffixLen), session...), kind)
	k = binary.BigEndian.AppendUint64(k, uint64(txn))
	return binary.BigEndian.AppendUint32(k, uint32(stmt))
}

func (t *Txn) stmtID(i int) int32 {
	if i < len(t.stmtIDs) {
		return t.stmtIDs[i]
	}
	return int32(i)
}

// maxInline bounds the result a head holds: every write of the session
// reads its head, and a findAndModify's result holds two documents.
const maxInline = 512

// Statements tells t how many statements its command has: one is
// recorded in the session's head. Unknown (not called), each statement
// has a record of its own. A nil Txn ignores it.
func (t *Txn) Statements(n int) {
	if t != nil {
		t.single = n == 1
	}
}

// Retry says that the command retries a txnNumber that recorded
// statements before: each statement must then be looked up (Prior) before
// it runs, so none runs in a group. A nil Txn (no retryable write) is no
// retry.
func (t *Txn) Retry() bool { return t != nil && (t.lookLocal || t.lookMigrated) }

// Prior returns the recorded result of statement i if it already ran,
// here or on the shard a migration brought the records from, and notes
// it among the retried statements.
func (t *Txn) Prior(i int) (bson.D, bool, error) {
	if !t.Retry() {
		return nil, false, nil
	}
	if t.lookLocal && t.inline != nil && t.inline.id == t.stmtID(i) {
		return t.answer(i, t.inline.result)
	}
	for _, kind := range [...]byte{kindStmt, kindMigratedStmt} {
		if (kind == kindStmt && !t.lookLocal) || (kind == kindMigratedStmt && !t.lookMigrated) {
			continue
		}
		raw, err := t.eng.Get(stmtKeyIn(t.session, kind, t.txn, t.stmtID(i)))
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("session: read statement record: %w", err)
		}
		return t.answer(i, raw)
	}
	return nil, false, nil
}

// answer decodes statement i's recorded result and notes it among the
// retried statements.
func (t *Txn) answer(i int, raw []byte) (bson.D, bool, error) {
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
		id := t.stmtID(i)
		t.stmts.add(id)
		if t.single && !t.lookLocal && len(raw) <= maxInline {
			// The txnNumber's only statement: the head holds it.
			return b.Set(t.sessionPrefix(kindHead), encodeHead(t.txn, t.now(), t.stmts, &inlineStmt{id: id, result: raw}))
		}
		// t.inline is the stored head's, kept on a retry.
		if err := b.Set(t.sessionPrefix(kindHead), encodeHead(t.txn, t.now(), t.stmts, t.inline)); err != nil {
			return err
		}
		return b.Set(t.stmtKey(id), raw)
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
// replicate the deletion): this member's records and a migration's each
// by their own head. It returns how many sessions' records it removed.
func Sweep(eng storage.Engine, now time.Time) (int, error) {
	stale, commits, err := staleSessions(eng, now.Add(-Lifetime))
	if err != nil || len(stale)+len(commits) == 0 {
		return 0, err
	}
	b := eng.NewBatch()
	defer b.Close()
	for _, r := range stale {
		if err := b.DeleteRange(r[0], r[1]); err != nil {
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

// staleSessions lists the key ranges of session records whose head was
// last written before cutoff (a head and its statements), and the
// transaction commit records older than it.
func staleSessions(eng storage.Engine, cutoff time.Time) (stale [][2][]byte, commits [][]byte, err error) {
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
		if len(k) < 2 || len(k) != 3+int(k[1]) {
			continue // a statement record
		}
		if _, isHead := decodeHead(v); !isHead {
			continue
		}
		kind := k[len(k)-1]
		if (kind != kindHead && kind != kindMigratedHead) || int64(binary.BigEndian.Uint64(v[8:])) >= cutoff.UnixMilli() {
			continue
		}
		from := append([]byte(nil), k...)
		to := append(append([]byte(nil), k[:len(k)-1]...), kind+2) // the head and its statements
		stale = append(stale, [2][]byte{from, to})
	}
	return stale, commits, it.Error()
}
