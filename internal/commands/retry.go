package commands

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
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
// go once it has not written for sessionLifetime (SweepSessions, on the
// primary).
const tagSession = byte(keyspace.Session)

// retryTxn is one retryable write command's session and txnNumber.
type retryTxn struct {
	eng      storage.Engine
	session  []byte
	txn      int64
	stmtIDs  []int32
	newer    bool         // the command's txnNumber had no records when it began: nothing to look up
	stmts    stmtRange    // statements recorded for txn, by every attempt
	prev     *sessionHead // the head a newer txn replaces, if any
	retried  bson.A
	sessText string
	now      func() time.Time
}

// retryableWrite returns the retry state of a write command, or nil when
// it is not a retryable write (standalone, or no txnNumber).
func (h *Handler) retryableWrite(r *request) (*retryTxn, error) {
	if h.deps.Repl == nil {
		return nil, nil
	}
	v, ok := bsonutil.Field(r.body, "txnNumber")
	if !ok {
		return nil, nil
	}
	txn, isInt := v.(int64)
	if !isInt {
		return nil, wrongType(r.name, "txnNumber", v, "long")
	}
	session, text, err := sessionKey(r)
	if err != nil {
		return nil, err
	}
	rt := &retryTxn{eng: h.deps.Store.Engine(), session: session, txn: txn, sessText: text, now: h.deps.Clock.Now}
	if rt.stmtIDs, err = stmtIDs(r); err != nil {
		return nil, err
	}
	return rt, rt.checkOrder()
}

// sessionKey encodes lsid.id (and lsid.uid when present).
func sessionKey(r *request) ([]byte, string, error) {
	v, ok := bsonutil.Field(r.body, "lsid")
	d, isDoc := v.(bson.D)
	if !ok || !isDoc {
		return nil, "", mongoerr.New(mongoerr.InvalidOptions, "Must specify an lsid with txnNumber")
	}
	idValue, _ := bsonutil.Field(d, "id")
	bin, isBin := idValue.(bson.Binary)
	if !isBin {
		return nil, "", mongoerr.New(mongoerr.InvalidOptions, "lsid.id must be a UUID")
	}
	id := append([]byte(nil), bin.Data...)
	if uid, ok := bsonutil.Field(d, "uid"); ok {
		if b, isBin := uid.(bson.Binary); isBin {
			id = append(id, b.Data...)
		}
	}
	if len(id) > 255 {
		return nil, "", mongoerr.New(mongoerr.InvalidOptions, "lsid is too long")
	}
	key := append([]byte{tagSession, byte(len(id))}, id...)
	return key, fmt.Sprintf("%x", bin.Data), nil
}

func stmtIDs(r *request) ([]int32, error) {
	v, ok := bsonutil.Field(r.body, "stmtIds")
	if !ok {
		return nil, nil
	}
	arr, isArr := v.(bson.A)
	if !isArr {
		return nil, wrongType(r.name, "stmtIds", v, "array")
	}
	out := make([]int32, len(arr))
	for i, x := range arr {
		n, err := toInt64(r.name, "stmtIds", x)
		if err != nil {
			return nil, err
		}
		out[i] = int32(n)
	}
	return out, nil
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

// sessionHead is a session's head record.
type sessionHead struct {
	txn   int64
	stmts stmtRange // unknown (any false) in a head written without it
}

func decodeHead(raw []byte) (sessionHead, bool) {
	if len(raw) != 16 && len(raw) != 24 {
		return sessionHead{}, false
	}
	h := sessionHead{txn: int64(binary.BigEndian.Uint64(raw))}
	if len(raw) == 24 {
		h.stmts = stmtRange{first: int32(binary.BigEndian.Uint32(raw[16:])), last: int32(binary.BigEndian.Uint32(raw[20:])), any: true}
	}
	return h, true
}

// checkOrder refuses a txnNumber older than the session's last one.
func (rt *retryTxn) checkOrder() error {
	raw, err := rt.eng.Get(rt.sessionPrefix(0))
	if errors.Is(err, storage.ErrNotFound) {
		rt.newer = true
		return nil
	}
	head, ok := decodeHead(raw)
	if err != nil || !ok {
		return fmt.Errorf("commands: read session record (%d bytes): %w", len(raw), err)
	}
	switch {
	case head.txn > rt.txn:
		return mongoerr.Newf(mongoerr.TransactionTooOld, "Retryable write with txnNumber %d is prohibited on session %s because a newer retryable write with txnNumber %d has already started on this session.", rt.txn, rt.sessText, head.txn)
	case head.txn < rt.txn:
		rt.newer, rt.prev = true, &head
	default:
		rt.stmts = head.stmts // a retry: keep the first attempt's range
	}
	return nil
}

// maxPointDeletes bounds the statement records deleted key by key; a
// larger (or unknown) range is deleted as a range.
const maxPointDeletes = 4096

// dropPrevious deletes the records of the txnNumber this one replaces.
func (rt *retryTxn) dropPrevious(b storage.Batch) error {
	p := rt.prev
	if p == nil {
		return nil
	}
	if !p.stmts.any || int64(p.stmts.last)-int64(p.stmts.first) >= maxPointDeletes {
		return b.DeleteRange(rt.sessionPrefix(1), rt.sessionPrefix(2))
	}
	for id := int64(p.stmts.first); id <= int64(p.stmts.last); id++ {
		if err := b.Delete(rt.stmtKeyOf(p.txn, int32(id))); err != nil {
			return err
		}
	}
	return nil
}

func (rt *retryTxn) sessionPrefix(kind byte) []byte {
	return append(append([]byte(nil), rt.session...), kind)
}

func (rt *retryTxn) stmtKey(stmt int32) []byte { return rt.stmtKeyOf(rt.txn, stmt) }

func (rt *retryTxn) stmtKeyOf(txn int64, stmt int32) []byte {
	k := binary.BigEndian.AppendUint64(rt.sessionPrefix(1), uint64(txn))
	return binary.BigEndian.AppendUint32(k, uint32(stmt))
}

func (rt *retryTxn) stmtID(i int) int32 {
	if i < len(rt.stmtIDs) {
		return rt.stmtIDs[i]
	}
	return int32(i)
}

// retry says that the command retries a txnNumber that recorded
// statements before: each statement must then be looked up (prior) before
// it runs, so none runs in a group.
func (rt *retryTxn) retry() bool { return rt != nil && !rt.newer }

// prior returns the recorded result of statement i if it already ran, and
// notes it in retriedStmtIds.
func (rt *retryTxn) prior(i int) (bson.D, bool, error) {
	if rt == nil || rt.newer {
		return nil, false, nil
	}
	raw, err := rt.eng.Get(rt.stmtKey(rt.stmtID(i)))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var d bson.D
	if err := bson.Unmarshal(raw, &d); err != nil {
		return nil, false, fmt.Errorf("commands: decode session record: %w", err)
	}
	rt.retried = append(rt.retried, rt.stmtID(i))
	return d, true, nil
}

// options returns opt with statement i's record added to its batch;
// result is called at commit, when the statement's outcome is known.
func (rt *retryTxn) options(opt docstore.WriteOptions, i int, result func() bson.D) docstore.WriteOptions {
	if rt == nil {
		return opt
	}
	opt.Extra = func(b storage.Batch) error {
		raw, err := bson.Marshal(result())
		if err != nil {
			return err
		}
		if rt.prev != nil {
			// Older txnNumbers' records go; this is now the session's.
			if err := rt.dropPrevious(b); err != nil {
				return err
			}
			rt.prev = nil
		}
		rt.stmts.add(rt.stmtID(i))
		head := binary.BigEndian.AppendUint64(nil, uint64(rt.txn))
		head = binary.BigEndian.AppendUint64(head, uint64(rt.now().UnixMilli()))
		head = binary.BigEndian.AppendUint32(head, uint32(rt.stmts.first))
		head = binary.BigEndian.AppendUint32(head, uint32(rt.stmts.last))
		if err := b.Set(rt.sessionPrefix(0), head); err != nil {
			return err
		}
		return b.Set(rt.stmtKey(rt.stmtID(i)), raw)
	}
	return opt
}

// reply adds retriedStmtIds to a write command's reply.
func (rt *retryTxn) reply(reply bson.D) bson.D {
	if rt == nil || len(rt.retried) == 0 {
		return reply
	}
	return append(reply, bson.E{Key: "retriedStmtIds", Value: rt.retried})
}

// refuseMulti refuses a multi-document statement in a retryable write, as
// mongod does.
func refuseMulti(rt *retryTxn) error {
	if rt == nil {
		return nil
	}
	return mongoerr.New(mongoerr.InvalidOptions, "Cannot use (or request) retryable writes with multi=true")
}

func recordN(n int32) func() bson.D {
	return func() bson.D { return bson.D{{Key: "n", Value: n}} }
}

func asInt32(d bson.D, key string) int32 {
	v, _ := bsonutil.Field(d, key)
	n, _ := v.(int32)
	return n
}

// addPrior counts a retried update statement's recorded result.
func (w *writeResult) addPrior(i int, prior bson.D) {
	w.n += int64(asInt32(prior, "n"))
	w.nModified += int64(asInt32(prior, "nModified"))
	if id, ok := bsonutil.Field(prior, "upserted"); ok {
		w.upserted = append(w.upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: id}})
	}
}

// SessionLifetime is how long a session's retryable-write records outlive
// its last write: mongod's localLogicalSessionTimeoutMinutes, which also
// bounds how long a driver may retry.
const SessionLifetime = sessionMinutes * time.Minute

// SweepSessions deletes the records of sessions that have not written for
// SessionLifetime, through eng (on a replica set, the primary's writes
// replicate the deletion). It returns how many sessions it removed.
func SweepSessions(eng storage.Engine, now time.Time) (int, error) {
	stale, err := staleSessions(eng, now.Add(-SessionLifetime))
	if err != nil || len(stale) == 0 {
		return 0, err
	}
	b := eng.NewBatch()
	defer b.Close()
	for _, p := range stale {
		if err := b.DeleteRange(p, append(append([]byte(nil), p...), 0xff)); err != nil {
			return 0, err
		}
	}
	return len(stale), b.Commit(false)
}

// staleSessions lists the key prefixes of sessions last written before
// cutoff.
func staleSessions(eng storage.Engine, cutoff time.Time) ([][]byte, error) {
	it, err := eng.NewIter([]byte{tagSession}, []byte{tagSession + 1})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var stale [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) < 2 || len(k) != 3+int(k[1]) || k[len(k)-1] != 0 || (len(v) != 16 && len(v) != 24) {
			continue // a statement record, or not a session's head
		}
		if int64(binary.BigEndian.Uint64(v[8:])) < cutoff.UnixMilli() {
			stale = append(stale, append([]byte(nil), k[:len(k)-1]...))
		}
	}
	return stale, it.Error()
}
