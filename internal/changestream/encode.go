package changestream

import (
	"encoding/binary"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/mayflydb/mayfly/internal/keyenc"
)

// A delete without images (every TTL deletion of a stream without
// pre-images) is encoded straight from the change: at a storm's hundred
// thousand expiries a second, building each event as a document first
// and then marshalling it was most of a stream's reading. The bytes are
// those Host.EncodeEvent gives for eventDoc's document
// (TestPlainDeleteEncoding).

// Inserts and updates of a stream without images or expanded events (the
// session workload's touches and logins under ten streams) are encoded
// so too, by appendPlainWrite: building and marshalling their documents
// was a fifth of the streams' share of the server.

// plainDelete reports whether the stream's event for ev is encoded by
// appendPlainDelete: a delete, no pre-image asked for.
func (c *Stream) plainDelete(ev *Event) bool {
	return ev.Op == OpDelete && c.spec.Before == "off" && len(ev.Doc) == 0 && !c.spec.Expanded
}

// plainDeleteEvent encodes a delete by appendPlainDelete, into a buffer
// of about its size.
func plainDeleteEvent(rec Record) ([]byte, error) {
	ev := rec.Event
	n := 320 + len(ev.DB) + len(ev.Coll) + len(ev.ID) + len(ev.RawID)
	if ev.Expired != nil {
		n += len(ev.Expired.Index)
	}
	return appendPlainDelete(make([]byte, 0, n), rec)
}

// appendPlainDelete appends the delete event of rec, as eventDoc shapes
// it, to dst.
func appendPlainDelete(dst []byte, rec Record) ([]byte, error) {
	ev := rec.Event
	idx, dst := appendEventHead(dst, rec)
	dst = appendNS(dst, ev)
	keyIdx, dst := bsoncore.AppendDocumentElementStart(dst, "documentKey")
	dst, err := appendEventID(dst, ev)
	if err != nil {
		return nil, err
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, keyIdx)
	switch {
	case ev.Expired != nil:
		expIdx, d := bsoncore.AppendDocumentElementStart(dst, "expired")
		d = bsoncore.AppendStringElement(d, "index", ev.Expired.Index)
		d = bsoncore.AppendInt64Element(d, "expireAfterSeconds", ev.Expired.AfterSecs)
		d = bsoncore.AppendDateTimeElement(d, "expiredAt", ev.Expired.AtMillis)
		dst, _ = bsoncore.AppendDocumentEnd(d, expIdx)
	case ev.Evicted != nil:
		evIdx, d := bsoncore.AppendDocumentElementStart(dst, "evicted")
		d = bsoncore.AppendStringElement(d, "index", ev.Evicted.Index)
		dst, _ = bsoncore.AppendDocumentEnd(d, evIdx)
	}
	dst, err = bsoncore.AppendDocumentEnd(dst, idx)
	return dst, err
}

// appendEventID appends the _id element of a delete's documentKey: the
// stored _id's own bytes when the event carries them, else the value
// decoded from its key encoding (eventID).
func appendEventID(dst []byte, ev *Event) ([]byte, error) {
	if len(ev.RawID) > 0 {
		dst = bsoncore.AppendHeader(dst, bsoncore.Type(ev.RawID[0]), "_id")
		return append(dst, ev.RawID[1:]...), nil
	}
	id, _, err := keyenc.DecodeValue(ev.ID)
	if err != nil {
		return nil, err
	}
	switch v := id.(type) {
	case nil:
		return bsoncore.AppendNullElement(dst, "_id"), nil
	case int32:
		return bsoncore.AppendInt32Element(dst, "_id", v), nil
	case int64:
		return bsoncore.AppendInt64Element(dst, "_id", v), nil
	case float64:
		return bsoncore.AppendDoubleElement(dst, "_id", v), nil
	case string:
		return bsoncore.AppendStringElement(dst, "_id", v), nil
	case bson.ObjectID:
		return bsoncore.AppendObjectIDElement(dst, "_id", v), nil
	case bson.DateTime:
		return bsoncore.AppendDateTimeElement(dst, "_id", int64(v)), nil
	case bool:
		return bsoncore.AppendBooleanElement(dst, "_id", v), nil
	}
	// Other types (documents, binary, ...) by the driver's reflection.
	t, data, err := bson.MarshalValue(id)
	if err != nil {
		return nil, err
	}
	dst = bsoncore.AppendHeader(dst, bsoncore.Type(t), "_id")
	return append(dst, data...), nil
}

// appendTokenData appends the _data string element of tok.
func appendTokenData(dst []byte, tok Token) []byte {
	dst = bsoncore.AppendHeader(dst, bsoncore.TypeString, "_data")
	lenAt := len(dst)
	dst = bsoncore.AppendInt32(dst, 0)
	dst = append(tok.AppendHex(dst), 0)
	binary.LittleEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	return dst
}

// plainWrite reports whether the stream's event for ev is encoded by
// appendPlainWrite: an insert of a stream without expanded events, or an
// update, without its element expiries, of one that asks for neither
// image and whose change carries no post-image.
func (c *Stream) plainWrite(ev *Event) bool {
	if c.spec.Expanded || ev.Elements != nil || ev.Expired != nil || ev.Evicted != nil {
		return false
	}
	switch ev.Op {
	case OpInsert:
		return len(ev.Doc) > 0
	case OpUpdate:
		return c.spec.FullDocument == "default" && c.spec.Before == "off" && len(ev.Doc) == 0 &&
			len(ev.Update) > 0 && (len(ev.RawID) > 0 || len(ev.ID) > 0)
	}
	return false
}

// plainWriteEvent encodes an insert or update by appendPlainWrite, into
// a buffer of about its size.
func plainWriteEvent(rec Record) ([]byte, error) {
	ev := rec.Event
	n := 320 + len(ev.DB) + len(ev.Coll) + len(ev.ID) + len(ev.RawID) + len(ev.Doc) + len(ev.Update)
	return appendPlainWrite(make([]byte, 0, n), rec)
}

// appendPlainWrite appends the insert or update event of rec, as eventDoc
// shapes it, to dst: an insert's fullDocument and documentKey from the
// stored document, an update's documentKey from its _id and its
// updateDescription as recorded, less disambiguatedPaths, which only
// expanded events show.
func appendPlainWrite(dst []byte, rec Record) ([]byte, error) {
	ev := rec.Event
	idx, dst := appendEventHead(dst, rec)
	if ev.Op == OpInsert {
		dst = bsoncore.AppendDocumentElement(dst, "fullDocument", ev.Doc)
	}
	dst = appendNS(dst, ev)
	keyIdx, dst := bsoncore.AppendDocumentElementStart(dst, "documentKey")
	var err error
	if ev.Op == OpInsert {
		dst, err = appendDocID(dst, ev.Doc)
	} else {
		dst, err = appendEventID(dst, ev)
	}
	if err != nil {
		return nil, err
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, keyIdx)
	if ev.Op == OpUpdate {
		if dst, err = appendUpdateDescription(dst, ev.Update); err != nil {
			return nil, err
		}
	}
	return bsoncore.AppendDocumentEnd(dst, idx)
}

// appendDocID appends the _id element of the stored document doc.
func appendDocID(dst, doc []byte) ([]byte, error) {
	id, err := bsoncore.Document(doc).LookupErr("_id")
	if err != nil {
		return nil, fmt.Errorf("change stream: inserted document without _id: %w", err)
	}
	dst = bsoncore.AppendHeader(dst, id.Type, "_id")
	return append(dst, id.Data...), nil
}

// appendUpdateDescription appends the updateDescription element of a
// recorded description, without its disambiguatedPaths.
func appendUpdateDescription(dst, desc []byte) ([]byte, error) {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, "updateDescription")
	elems, err := bsoncore.Document(desc).Elements()
	if err != nil {
		return nil, fmt.Errorf("change stream: recorded updateDescription: %w", err)
	}
	for _, e := range elems {
		if e.Key() != DisambiguatedPaths {
			dst = append(dst, e...)
		}
	}
	return bsoncore.AppendDocumentEnd(dst, idx)
}

// appendEventHead starts an event document in dst with the fields every
// event opens with: its resume token, operationType, clusterTime and
// wallTime. It returns the document's start for bsoncore.AppendDocumentEnd.
func appendEventHead(dst []byte, rec Record) (int32, []byte) {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	if ev := rec.Event; len(ev.LSID) > 0 {
		// mongod puts a transaction's fields first.
		dst = bsoncore.AppendInt64Element(dst, "txnNumber", ev.TxnNumber)
		dst = bsoncore.AppendDocumentElement(dst, "lsid", ev.LSID)
	}
	tokIdx, dst := bsoncore.AppendDocumentElementStart(dst, "_id")
	dst = appendTokenData(dst, Token{Pos: rec.Pos})
	dst, _ = bsoncore.AppendDocumentEnd(dst, tokIdx)
	dst = bsoncore.AppendStringElement(dst, "operationType", rec.Event.Op.String())
	dst = bsoncore.AppendTimestampElement(dst, "clusterTime", rec.Pos.TS.T, rec.Pos.TS.I)
	return idx, bsoncore.AppendDateTimeElement(dst, "wallTime", rec.WallMillis)
}

// appendNS appends the ns element of ev, as nsDoc shapes it.
func appendNS(dst []byte, ev *Event) []byte {
	nsIdx, dst := bsoncore.AppendDocumentElementStart(dst, "ns")
	dst = bsoncore.AppendStringElement(dst, "db", ev.DB)
	if ev.Coll != "" {
		dst = bsoncore.AppendStringElement(dst, "coll", ev.Coll)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, nsIdx)
	return dst
}

// plainEncoder is how the stream's event for ev is encoded straight from
// the change (appendPlainDelete or appendPlainWrite), or nil when it is
// built as a document.
func (c *Stream) plainEncoder(ev *Event) func(Record) ([]byte, error) {
	switch {
	case c.plainDelete(ev):
		return plainDeleteEvent
	case c.plainWrite(ev):
		return plainWriteEvent
	}
	return nil
}
