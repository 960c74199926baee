package changestream

import (
	"encoding/binary"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyenc"
)

// Op is what a change did.
type Op byte

// The operations a change log record describes.
const (
	OpInsert Op = iota + 1
	OpUpdate
	OpReplace
	OpDelete
	OpDrop
	OpRename
	OpDropDatabase
	// OpExpiring warns that a document will expire (a TTL index's
	// expiryWarningSeconds); Expired says when.
	OpExpiring
	// The DDL events a stream reports with showExpandedEvents only.
	OpCreate
	OpCreateIndexes
	OpDropIndexes
	OpModify
)

var opNames = [...]string{OpInsert: "insert", OpUpdate: "update", OpReplace: "replace", OpDelete: "delete",
	OpDrop: "drop", OpRename: "rename", OpDropDatabase: "dropDatabase", OpExpiring: "expiring",
	OpCreate: "create", OpCreateIndexes: "createIndexes", OpDropIndexes: "dropIndexes", OpModify: "modify"}

// Expanded reports whether only streams with showExpandedEvents see the
// operation.
func (o Op) Expanded() bool { return o >= OpCreate && o <= OpModify }

// The nsType values of a create event; a drop or modify of a view or a
// time-series collection carries its nsType too, since mongod reports
// those from system.views, to database and cluster streams only, and
// without a collectionUUID.
const (
	NsCollection = "collection"
	NsView       = "view"
	NsTimeseries = "timeseries"
)

// String is the operationType change streams report.
func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "unknown"
}

// Expiry marks a delete done because the document expired.
type Expiry struct {
	Index     string // the TTL index's name
	AfterSecs int64  // its expireAfterSeconds
	AtMillis  int64  // the moment the document expired, Unix ms
}

// Eviction marks a delete done because an lruLimit index needed room.
type Eviction struct {
	Index string // the lruLimit index's name
}

// ElementExpiry marks an update done because elements of an array
// expired (an expireElements TTL index).
type ElementExpiry struct {
	Index     string // the TTL index's name
	AfterSecs int64  // its expireAfterSeconds
}

// Event is one logical change as the docstore saw it. Byte fields are
// raw encodings: RawID is the _id's BSON value, ID the key-encoded _id
// (internal/keyenc; a TTL deletion knows no more, and a key-encoded
// number decodes as a number of equal value, not always of the same
// type); Doc, Pre and Update are BSON documents. Empty fields are left out of the record, so a
// TTL deletion costs its namespace, _id and marker only.
type Event struct {
	Op       Op
	DB, Coll string
	ID       []byte // key-encoded _id, when neither RawID nor Doc has it
	RawID    []byte // the _id as a BSON value: type byte, then its bytes
	Doc      []byte // the document after the change (insert, replace; update with post-images)
	Pre      []byte // the document before it, with pre-images on
	Update   []byte // updateDescription (update)
	ToDB     string // rename target
	ToColl   string
	Expired  *Expiry
	Evicted  *Eviction
	Elements *ElementExpiry
	// UUID is the collection's UUID (16 bytes), reported as
	// collectionUUID with showExpandedEvents; empty for a view and for
	// dropDatabase.
	UUID []byte
	// Desc is the operationDescription (BSON document) of a DDL event
	// and a rename; Before a modify's stateBeforeChange.
	Desc   []byte
	Before []byte
	// NsType is what a create made (NsCollection, NsView, NsTimeseries);
	// on a drop or modify, set only for a view or time-series collection.
	NsType string
	// LSID (the session's lsid document) and TxnNumber name the
	// transaction that made a write; LSID is empty outside one.
	LSID      []byte
	TxnNumber int64
}

// DocumentID is the changed document's _id: the event's copy of it, or
// the document's, else decoded from its key encoding (a TTL deletion's:
// a number then decodes as a number of equal value, not always of the
// stored type).
func (e *Event) DocumentID() (any, error) {
	var raw bson.RawValue
	switch {
	case len(e.RawID) > 0:
		raw = bson.RawValue{Type: bson.Type(e.RawID[0]), Value: e.RawID[1:]}
	case len(e.Doc) > 0:
		v, err := bson.Raw(e.Doc).LookupErr("_id")
		if err != nil {
			return e.keyID()
		}
		raw = v
	default:
		return e.keyID()
	}
	var id any
	return id, raw.Unmarshal(&id)
}

func (e *Event) keyID() (any, error) {
	id, _, err := keyenc.DecodeValue(e.ID)
	return id, err
}

// View reports whether the event is about a view's definition (a view or
// a time-series collection): mongod reports those from system.views.
func (e *Event) View() bool { return e.NsType == NsView || e.NsType == NsTimeseries }

const (
	hasDoc = 1 << iota
	hasPre
	hasUpdate
	hasRename
	hasExpired
	hasRawID
	hasEvicted
	hasElements
)

// The second flags byte: present when the op byte has extFlags set, so
// records written before it decode as they were.
const (
	hasUUID = 1 << iota
	hasDesc
	hasBefore
	hasNsType
	hasTxn
)

const extFlags = 0x80

// Encode appends the event's record to dst:
//
//	op(1) flags(1) db coll id [rawID] [doc] [pre] [update] [toDB toColl] [index afterSecs(varint) atMillis(varint)] [evicting index]
//	[elements' index afterSecs(varint)] [uuid] [desc] [before] [nsType]
//
// then [lsid txnNumber(varint)], where strings and byte fields are uvarint
// length + bytes and a flag bit says which optional fields follow. The
// last five have flags of their own
// in a second byte after the first, there when the op byte's high bit is
// set.
func (e *Event) Encode(dst []byte) []byte {
	flags := byte(0)
	flags |= bit(len(e.Doc) > 0, hasDoc) | bit(len(e.Pre) > 0, hasPre) | bit(len(e.Update) > 0, hasUpdate)
	flags |= bit(e.ToColl != "", hasRename) | bit(e.Expired != nil, hasExpired) | bit(len(e.RawID) > 0, hasRawID)
	flags |= bit(e.Evicted != nil, hasEvicted) | bit(e.Elements != nil, hasElements)
	ext := bit(len(e.UUID) > 0, hasUUID) | bit(len(e.Desc) > 0, hasDesc) | bit(len(e.Before) > 0, hasBefore) | bit(e.NsType != "", hasNsType)
	ext |= bit(len(e.LSID) > 0, hasTxn)
	if ext != 0 {
		dst = append(dst, byte(e.Op)|extFlags, flags, ext)
	} else {
		dst = append(dst, byte(e.Op), flags)
	}
	dst = appendBytes(dst, []byte(e.DB))
	dst = appendBytes(dst, []byte(e.Coll))
	dst = appendBytes(dst, e.ID)
	if flags&hasRawID != 0 {
		dst = appendBytes(dst, e.RawID)
	}
	if flags&hasDoc != 0 {
		dst = appendBytes(dst, e.Doc)
	}
	if flags&hasPre != 0 {
		dst = appendBytes(dst, e.Pre)
	}
	if flags&hasUpdate != 0 {
		dst = appendBytes(dst, e.Update)
	}
	if flags&hasRename != 0 {
		dst = appendBytes(dst, []byte(e.ToDB))
		dst = appendBytes(dst, []byte(e.ToColl))
	}
	if flags&hasExpired != 0 {
		dst = appendBytes(dst, []byte(e.Expired.Index))
		dst = binary.AppendVarint(dst, e.Expired.AfterSecs)
		dst = binary.AppendVarint(dst, e.Expired.AtMillis)
	}
	if flags&hasEvicted != 0 {
		dst = appendBytes(dst, []byte(e.Evicted.Index))
	}
	if flags&hasElements != 0 {
		dst = appendBytes(dst, []byte(e.Elements.Index))
		dst = binary.AppendVarint(dst, e.Elements.AfterSecs)
	}
	return e.encodeExt(dst, ext)
}

func (e *Event) encodeExt(dst []byte, ext byte) []byte {
	if ext&hasUUID != 0 {
		dst = appendBytes(dst, e.UUID)
	}
	if ext&hasDesc != 0 {
		dst = appendBytes(dst, e.Desc)
	}
	if ext&hasBefore != 0 {
		dst = appendBytes(dst, e.Before)
	}
	if ext&hasNsType != 0 {
		dst = appendBytes(dst, []byte(e.NsType))
	}
	if ext&hasTxn != 0 {
		dst = appendBytes(dst, e.LSID)
		dst = binary.AppendVarint(dst, e.TxnNumber)
	}
	return dst
}

// Size is an upper bound of the event's encoded length.
func (e *Event) Size() int {
	n := 3 + 12*binary.MaxVarintLen64 + len(e.DB) + len(e.Coll) + len(e.ID) + len(e.RawID) + len(e.Doc) + len(e.Pre) + len(e.Update) + len(e.ToDB) + len(e.ToColl)
	n += len(e.UUID) + len(e.Desc) + len(e.Before) + len(e.NsType) + len(e.LSID)
	if e.Expired != nil {
		n += len(e.Expired.Index) + 2*binary.MaxVarintLen64
	}
	if e.Evicted != nil {
		n += len(e.Evicted.Index) + binary.MaxVarintLen64
	}
	if e.Elements != nil {
		n += len(e.Elements.Index) + 2*binary.MaxVarintLen64
	}
	return n
}

func bit(on bool, b byte) byte {
	if on {
		return b
	}
	return 0
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// ErrCorrupt is returned for a record that does not decode.
var ErrCorrupt = errors.New("changestream: corrupt change log record")

// Decode reads a record written by Encode. The event's byte fields alias
// b.
func Decode(b []byte) (*Event, error) {
	if len(b) < 2 {
		return nil, ErrCorrupt
	}
	e := &Event{Op: Op(b[0] &^ extFlags)}
	flags, ext := b[1], byte(0)
	r := reader{b: b[2:]}
	if b[0]&extFlags != 0 {
		if len(b) < 3 {
			return nil, ErrCorrupt
		}
		ext, r.b = b[2], b[3:]
	}
	e.DB, e.Coll, e.ID = string(r.bytes()), string(r.bytes()), r.bytes()
	if flags&hasRawID != 0 {
		e.RawID = r.bytes()
	}
	if flags&hasDoc != 0 {
		e.Doc = r.bytes()
	}
	if flags&hasPre != 0 {
		e.Pre = r.bytes()
	}
	if flags&hasUpdate != 0 {
		e.Update = r.bytes()
	}
	if flags&hasRename != 0 {
		e.ToDB, e.ToColl = string(r.bytes()), string(r.bytes())
	}
	if flags&hasExpired != 0 {
		e.Expired = &Expiry{Index: string(r.bytes()), AfterSecs: r.varint(), AtMillis: r.varint()}
	}
	if flags&hasEvicted != 0 {
		e.Evicted = &Eviction{Index: string(r.bytes())}
	}
	if flags&hasElements != 0 {
		e.Elements = &ElementExpiry{Index: string(r.bytes()), AfterSecs: r.varint()}
	}
	decodeExt(e, ext, &r)
	if r.bad {
		return nil, ErrCorrupt
	}
	return e, nil
}

func decodeExt(e *Event, ext byte, r *reader) {
	if ext&hasUUID != 0 {
		e.UUID = r.bytes()
	}
	if ext&hasDesc != 0 {
		e.Desc = r.bytes()
	}
	if ext&hasBefore != 0 {
		e.Before = r.bytes()
	}
	if ext&hasNsType != 0 {
		e.NsType = string(r.bytes())
	}
	if ext&hasTxn != 0 {
		e.LSID, e.TxnNumber = r.bytes(), r.varint()
	}
}

// reader takes fields off a record, remembering a short read.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) bytes() []byte {
	n, k := binary.Uvarint(r.b)
	if k <= 0 || n > uint64(len(r.b)-k) {
		r.bad = true
		return nil
	}
	out := r.b[k : k+int(n) : k+int(n)]
	r.b = r.b[k+int(n):]
	return out
}

func (r *reader) varint() int64 {
	v, k := binary.Varint(r.b)
	if k <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[k:]
	return v
}
