package session

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/storage"
)

// Retryable-write history moves with a chunk. The router sends a retry
// to whichever shard owns the document when the retry comes; after a
// migration that is the recipient, which must answer the first attempt's
// result as the donor would have. In its critical section the donor
// exports the statement records of every session's latest txnNumber (a
// routed write's record does not say which document it wrote, and a
// record of a document outside the range is never asked for on the
// recipient: the router sends its retry elsewhere), and the recipient
// imports them among its migrated records.

// MovedStmt is one statement record on its way to another shard.
type MovedStmt struct {
	// LSID is the session's key id (lsid.id, then lsid.uid).
	LSID []byte
	Txn  int64
	// LastWrite is when the session last wrote on the donor (unix
	// milliseconds): the recipient sweeps the records a Lifetime later.
	LastWrite int64
	Stmt      int32
	// Result is the statement's recorded result (BSON).
	Result []byte
}

// Seen is what an export read of each session it exported whole: its
// two heads, by session key prefix. A later export given the same Seen
// skips the sessions whose heads are unchanged since; that is how a
// migration copies the records before its critical section and, inside
// it, only those written since.
type Seen map[string]string

// ExportStmts reads the statement records of each session's latest
// txnNumber, this member's and those a migration brought, in key order
// from the key from (nil: the first), until about limit bytes of
// results. A page ends between sessions, and inside one only when that
// session alone holds more than limit. next is where the following call
// starts; nil when there is nothing after. With seen, a session whose
// heads seen holds unchanged is skipped, and every session exported
// whole is noted in seen. r should be a snapshot when writes go on: a
// session's heads and statements are then read at one instant.
//
// It seeks from session to session and, within one, to its latest
// txnNumber's statements: stepping through the key space instead meant
// stepping over every older statement's deletion and every older version
// of the heads, which a busy session leaves by the thousand in the
// memtable.
func ExportStmts(r storage.Reader, from []byte, limit int, seen Seen) (stmts []MovedStmt, next []byte, err error) {
	lower := []byte{tagSession}
	if from != nil {
		lower = bytes.Clone(from)
	}
	it, err := r.NewIter([]byte{tagSession}, []byte{tagSession + 1})
	if err != nil {
		return nil, nil, err
	}
	defer it.Close()
	size := 0
	for it.SeekGE(lower) {
		prefix, ok := sessionPrefixOf(it.Key())
		if !ok {
			return nil, nil, fmt.Errorf("session: a key of %d bytes under the session tag has no session id", len(it.Key()))
		}
		prefix = bytes.Clone(prefix) // the iterator's key changes as it moves
		whole := bytes.Compare(lower, prefix) <= 0
		if whole && size >= limit {
			return stmts, prefix, nil
		}
		cur, err := latestOf(r, prefix)
		if err != nil {
			return nil, nil, err
		}
		if seen != nil && seen[string(prefix)] == cur.heads {
			lower = keyspace.PrefixEnd(prefix)
			continue
		}
		start := size
		if whole && cur.inline != nil {
			stmts = append(stmts, MovedStmt{LSID: bytes.Clone(prefix[2:]), Txn: cur.txn, LastWrite: cur.lastWrite, Stmt: cur.inline.id, Result: cur.inline.result})
			size += len(cur.inline.result) + len(prefix) + stmtSuffixLen // as its own record would count
		}
		for _, kind := range cur.kinds() {
			lo := stmtKeyIn(prefix, kind, cur.txn, 0)[:len(prefix)+9]
			hi := stmtKeyIn(prefix, kind, cur.txn+1, 0)[:len(prefix)+9]
			if bytes.Compare(lo, lower) < 0 {
				lo = lower
			}
			for ok := it.SeekGE(lo); ok && bytes.Compare(it.Key(), hi) < 0; ok = it.Next() {
				k, v := it.Key(), it.Value()
				_, _, txn, stmt, _ := splitStmtKey(k)
				stmts = append(stmts, MovedStmt{LSID: bytes.Clone(prefix[2:]), Txn: txn, LastWrite: cur.lastWrite, Stmt: stmt, Result: bytes.Clone(v)})
				if size += len(v) + len(k); size-start >= limit {
					return stmts, append(bytes.Clone(k), 0), it.Error()
				}
			}
			if err := it.Error(); err != nil {
				return nil, nil, err
			}
		}
		if seen != nil && whole {
			seen[string(prefix)] = cur.heads
		}
		lower = keyspace.PrefixEnd(prefix)
	}
	return stmts, nil, it.Error()
}

// sessionPrefixOf is the session part of a key under the session tag.
func sessionPrefixOf(k []byte) ([]byte, bool) {
	if len(k) < 2 || len(k) < 2+int(k[1]) {
		return nil, false
	}
	return k[:2+int(k[1])], true
}

// exportSession is what ExportStmts takes of one session: its latest
// txnNumber and which of its records hold it.
type exportSession struct {
	prefix       []byte
	heads        string // both heads as stored, for Seen
	txn          int64
	lastWrite    int64
	local, moved bool
	// inline is the statement this member's head holds, when it is of
	// txn.
	inline *inlineStmt
}

// kinds are the statement records that hold the session's latest
// txnNumber.
func (s exportSession) kinds() []byte {
	var out []byte
	if s.local {
		out = append(out, kindStmt)
	}
	if s.moved {
		out = append(out, kindMigratedStmt)
	}
	return out
}

// latestOf reads the session's two heads and picks the newer txnNumber.
func latestOf(r storage.Reader, prefix []byte) (exportSession, error) {
	s := exportSession{prefix: bytes.Clone(prefix)}
	local, hasLocal, err := readHeadAt(r, prefix, kindHead)
	if err != nil {
		return s, err
	}
	moved, hasMoved, err := readHeadAt(r, prefix, kindMigratedHead)
	if err != nil {
		return s, err
	}
	s.heads = string(append(append([]byte{byte(len(local.raw))}, local.raw...), moved.raw...))
	switch {
	case hasLocal && (!hasMoved || local.txn >= moved.txn):
		s.txn, s.lastWrite, s.local, s.inline = local.txn, local.lastWrite, true, local.inline
		s.moved = hasMoved && moved.txn == local.txn
		s.lastWrite = max(s.lastWrite, moved.lastWrite)
	case hasMoved:
		s.txn, s.lastWrite, s.moved = moved.txn, moved.lastWrite, true
	}
	return s, nil
}

// splitStmtKey parses a statement record's key; isStmt is false for any
// other key under the tag.
func splitStmtKey(k []byte) (prefix []byte, kind byte, txn int64, stmt int32, isStmt bool) {
	if len(k) < 2 {
		return nil, 0, 0, 0, false
	}
	n := 2 + int(k[1])
	if len(k) != n+stmtSuffixLen || (k[n] != kindStmt && k[n] != kindMigratedStmt) {
		return nil, 0, 0, 0, false
	}
	return k[:n], k[n], int64(binary.BigEndian.Uint64(k[n+1:])), int32(binary.BigEndian.Uint32(k[n+9:])), true
}

// readHeadAt reads the session's head of kind, with when it last wrote.
func readHeadAt(r storage.Reader, prefix []byte, kind byte) (storedHead, bool, error) {
	raw, err := r.Get(append(bytes.Clone(prefix), kind))
	if errors.Is(err, storage.ErrNotFound) {
		return storedHead{}, false, nil
	}
	h, ok := decodeHead(raw)
	if err != nil || !ok {
		return storedHead{}, false, fmt.Errorf("session: read session record (%d bytes): %w", len(raw), err)
	}
	return storedHead{head: h, lastWrite: int64(binary.BigEndian.Uint64(raw[8:])), raw: raw}, true, nil
}

// storedHead is a head record with its last write time.
type storedHead struct {
	head
	lastWrite int64
	raw       []byte // as stored
}

// ImportStmts installs statement records another shard exported among
// this member's migrated records, in one batch through eng (replicated
// on a replica set). For each session the newest txnNumber wins: one
// older than what this member holds is dropped, a newer one replaces the
// migrated records of older ones, and the same one adds statements.
func ImportStmts(eng storage.Engine, stmts []MovedStmt) error {
	if len(stmts) == 0 {
		return nil
	}
	b := eng.NewBatch()
	defer b.Close()
	heads := map[string]*importHead{}
	for _, st := range stmts {
		if len(st.LSID) > MaxLSID {
			return fmt.Errorf("session: lsid of %d bytes, longer than %d", len(st.LSID), MaxLSID)
		}
		prefix := append([]byte{tagSession, byte(len(st.LSID))}, st.LSID...)
		h, err := headForImport(eng, heads, prefix)
		if err != nil {
			return err
		}
		if err := h.add(b, st); err != nil {
			return err
		}
	}
	for _, h := range heads {
		if err := h.write(b); err != nil {
			return err
		}
	}
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("session: install migrated records: %w", err)
	}
	return nil
}

// importHead is a session's migrated head as an import builds it.
type importHead struct {
	prefix  []byte
	floor   int64 // this member's own txnNumber: older ones are not installed
	head    storedHead
	has     bool
	changed bool
}

func headForImport(eng storage.Engine, heads map[string]*importHead, prefix []byte) (*importHead, error) {
	if h, ok := heads[string(prefix)]; ok {
		return h, nil
	}
	h := &importHead{prefix: prefix, floor: -1}
	local, hasLocal, err := readHeadAt(eng, prefix, kindHead)
	if err != nil {
		return nil, err
	}
	if hasLocal {
		h.floor = local.txn
	}
	if h.head, h.has, err = readHeadAt(eng, prefix, kindMigratedHead); err != nil {
		return nil, err
	}
	heads[string(prefix)] = h
	return h, nil
}

// add puts one statement record into the batch, if it is not older than
// what the session holds here.
func (h *importHead) add(b storage.Batch, st MovedStmt) error {
	if st.Txn < h.floor || (h.has && st.Txn < h.head.txn) {
		return nil
	}
	if h.has && st.Txn > h.head.txn {
		// The migrated statements of an older txnNumber go first.
		if err := b.DeleteRange(append(bytes.Clone(h.prefix), kindMigratedStmt), append(bytes.Clone(h.prefix), kindMigratedStmt+1)); err != nil {
			return err
		}
	}
	if !h.has || st.Txn > h.head.txn {
		h.head, h.has = storedHead{head: head{txn: st.Txn}}, true
	}
	h.head.stmts.add(st.Stmt)
	h.head.lastWrite = max(h.head.lastWrite, st.LastWrite)
	h.changed = true
	return b.Set(stmtKeyIn(h.prefix, kindMigratedStmt, st.Txn, st.Stmt), st.Result)
}

// write sets the session's migrated head, if the import changed it.
func (h *importHead) write(b storage.Batch) error {
	if !h.changed {
		return nil
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(h.head.txn))
	v = binary.BigEndian.AppendUint64(v, uint64(h.head.lastWrite))
	v = binary.BigEndian.AppendUint32(v, uint32(h.head.stmts.first))
	v = binary.BigEndian.AppendUint32(v, uint32(h.head.stmts.last))
	return b.Set(append(bytes.Clone(h.prefix), kindMigratedHead), v)
}
