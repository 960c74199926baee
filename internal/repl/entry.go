package repl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/mayflydb/mayfly/internal/changestream"
)

// An entry's data in the raft log. Every member applies the same bytes, so
// an entry carries effects, never a command to evaluate again: the
// primary decided everything (which documents, which index keys) before it
// proposed.
//
//	kind(1) proposal(8) ts(8) wallMillis(8) flags(1)
//	deltas: count(uvarint) {collID(uvarint) docs(varint) bytes(varint)}…
//	events: count(uvarint) {len(uvarint) event}… (change stream events,
//	        internal/changestream; every member writes them under the
//	        entry's ts at apply)
//	expiries: count(uvarint) {shared(uvarint) len(uvarint) rest}… (the
//	        TTL entry keys of documents the primary's monitor expired,
//	        each sharing its first bytes with the key before; every
//	        member deletes them from its own deletion records, expiry.go)
//	payload: the rest (a storage batch's repr, or a config document)
type entryKind byte

const (
	// kindWrite carries one storage batch of documents, index entries and
	// session records.
	kindWrite entryKind = 1
	// kindConfig carries a new replica set config (BSON).
	kindConfig entryKind = 2
	// kindNoop carries no change: applying it only advances the applied
	// index and timestamp. A shard's primary writes one when a router's
	// cluster time passed its last stamp and a change stream needs its
	// high-water mark there (CatchUpClusterTime).
	kindNoop entryKind = 3
)

const (
	flagCatalog = 1 // the batch changes the catalog
	flagExpiry  = 2 // the entry carries compact expiries
)

// entry is a decoded log entry.
type entry struct {
	kind     entryKind
	proposal uint64
	ts       changestream.Timestamp
	wall     int64 // the primary's wall clock at proposal, Unix ms
	flags    byte
	deltas   []CountDelta
	events   [][]byte
	expiries expiryKeys
	payload  []byte
	// refusal, set at apply, is why a config entry was not adopted (a
	// newer config came before it); its proposer is answered with it.
	refusal error
}

// CountDelta is how a batch changes a collection's document count and
// size; members other than the proposer keep their counters with it.
type CountDelta struct {
	CollID uint64
	Docs   int64
	Bytes  int64
}

// An encoded entry starts with a fixed header: kind(1) proposal(8)
// ts.T(4) ts.I(4) wall(8) flags(1); the offsets name each field.
const (
	offKind     = 0
	offProposal = 1
	offTS       = 9
	offTSInc    = 13
	offWall     = 17
	offFlags    = 25
	entryHeader = offFlags + 1
)

// headerOf reads an encoded entry's kind and flags without decoding it;
// ok is false for data too short to hold a header.
func headerOf(b []byte) (kind entryKind, flags byte, ok bool) {
	if len(b) < entryHeader {
		return 0, 0, false
	}
	return entryKind(b[offKind]), b[offFlags], true
}

func (e *entry) encode() []byte {
	b := make([]byte, entryHeader, entryHeader+8+len(e.deltas)*12+len(e.payload))
	b[offKind] = byte(e.kind)
	binary.BigEndian.PutUint64(b[offProposal:], e.proposal)
	putStamp(b, e.ts, e.wall)
	b[offFlags] = e.flags
	b = binary.AppendUvarint(b, uint64(len(e.deltas)))
	for _, d := range e.deltas {
		b = binary.AppendUvarint(b, d.CollID)
		b = binary.AppendVarint(b, d.Docs)
		b = binary.AppendVarint(b, d.Bytes)
	}
	b = binary.AppendUvarint(b, uint64(len(e.events)))
	for _, ev := range e.events {
		b = binary.AppendUvarint(b, uint64(len(ev)))
		b = append(b, ev...)
	}
	b = binary.AppendUvarint(b, uint64(e.expiries.n))
	b = append(b, e.expiries.enc...)
	return append(b, e.payload...)
}

// putStamp writes ts and wall into an encoded entry: the node stamps each
// proposal as it hands it to raft, so stamps grow in log order.
func putStamp(b []byte, ts changestream.Timestamp, wall int64) {
	binary.BigEndian.PutUint32(b[offTS:], ts.T)
	binary.BigEndian.PutUint32(b[offTSInc:], ts.I)
	binary.BigEndian.PutUint64(b[offWall:], uint64(wall))
}

var errShortEntry = errors.New("repl: log entry too short")

func decodeEntry(b []byte) (*entry, error) {
	if len(b) < entryHeader {
		return nil, errShortEntry
	}
	e := &entry{
		kind:     entryKind(b[offKind]),
		proposal: binary.BigEndian.Uint64(b[offProposal:]),
		ts:       changestream.Timestamp{T: binary.BigEndian.Uint32(b[offTS:]), I: binary.BigEndian.Uint32(b[offTSInc:])},
		wall:     int64(binary.BigEndian.Uint64(b[offWall:])),
		flags:    b[offFlags],
	}
	rest := b[entryHeader:]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)) {
		return nil, fmt.Errorf("repl: log entry: bad delta count")
	}
	rest = rest[k:]
	for range n {
		var d CountDelta
		var ok bool
		if d.CollID, rest, ok = uvarint(rest); !ok {
			return nil, errShortEntry
		}
		if d.Docs, rest, ok = varint(rest); !ok {
			return nil, errShortEntry
		}
		if d.Bytes, rest, ok = varint(rest); !ok {
			return nil, errShortEntry
		}
		e.deltas = append(e.deltas, d)
	}
	events, rest, err := decodeEvents(rest)
	if err != nil {
		return nil, err
	}
	e.events = events
	if e.expiries, rest, err = decodeExpiryKeys(rest); err != nil {
		return nil, err
	}
	e.payload = rest
	return e, nil
}

// decodeEvents reads the events section; the events alias b.
func decodeEvents(b []byte) ([][]byte, []byte, error) {
	n, b, ok := uvarint(b)
	if !ok || n > uint64(len(b)) {
		return nil, nil, errShortEntry
	}
	var events [][]byte
	for range n {
		var size uint64
		if size, b, ok = uvarint(b); !ok || size > uint64(len(b)) {
			return nil, nil, errShortEntry
		}
		events = append(events, b[:size:size])
		b = b[size:]
	}
	return events, b, nil
}

func uvarint(b []byte) (uint64, []byte, bool) {
	v, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, nil, false
	}
	return v, b[k:], true
}

func varint(b []byte) (int64, []byte, bool) {
	v, k := binary.Varint(b)
	if k <= 0 {
		return 0, nil, false
	}
	return v, b[k:], true
}
