package changestream

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func invalidateDoc(rec Record) bson.D {
	tok := Token{Pos: rec.Pos, Kind: KindInvalidate}
	return bson.D{
		{Key: "_id", Value: bson.D{{Key: "_data", Value: tok.String()}}},
		{Key: "operationType", Value: "invalidate"},
		{Key: "clusterTime", Value: bson.Timestamp{T: rec.Pos.TS.T, I: rec.Pos.TS.I}},
		{Key: "wallTime", Value: bson.DateTime(rec.WallMillis)},
	}
}

// eventDoc is the change event as mongod shapes it.
func (c *Stream) eventDoc(rec Record) (bson.D, error) {
	ev := rec.Event
	tok := Token{Pos: rec.Pos}
	d := txnFields(ev)
	d = append(d,
		bson.E{Key: "_id", Value: bson.D{{Key: "_data", Value: tok.String()}}},
		bson.E{Key: "operationType", Value: ev.Op.String()},
		bson.E{Key: "clusterTime", Value: bson.Timestamp{T: rec.Pos.TS.T, I: rec.Pos.TS.I}},
	)
	if c.spec.Expanded && len(ev.UUID) > 0 {
		d = append(d, bson.E{Key: "collectionUUID", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: ev.UUID}})
	}
	d = append(d, bson.E{Key: "wallTime", Value: bson.DateTime(rec.WallMillis)})
	full, err := decodeRaw(ev.Doc)
	if err != nil {
		return nil, err
	}
	if d, err = c.addImages(d, ev, full); err != nil {
		return nil, err
	}
	d = append(d, bson.E{Key: "ns", Value: nsDoc(ev.DB, ev.Coll)})
	if ev.Op <= OpDelete || ev.Op == OpExpiring {
		id, err := eventID(ev, full)
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: "documentKey", Value: bson.D{{Key: "_id", Value: id}}})
	}
	if c.spec.Expanded {
		return appendExpanded(d, ev)
	}
	return appendDetails(d, ev, false)
}

// appendExpanded adds the details of an event as a stream with
// showExpandedEvents reports it, in mongod's order: operationDescription,
// the details every stream gets, stateBeforeChange, nsType (a create's).
func appendExpanded(d bson.D, ev *Event) (bson.D, error) {
	desc, err := decodeRaw(ev.Desc)
	if err != nil {
		return nil, err
	}
	if desc != nil {
		d = append(d, bson.E{Key: "operationDescription", Value: desc})
	}
	if d, err = appendDetails(d, ev, true); err != nil {
		return nil, err
	}
	before, err := decodeRaw(ev.Before)
	if err != nil {
		return nil, err
	}
	if before != nil {
		d = append(d, bson.E{Key: "stateBeforeChange", Value: before})
	}
	if ev.Op == OpCreate {
		d = append(d, bson.E{Key: "nsType", Value: ev.NsType})
	}
	return d, nil
}

// appendDetails adds what only some operations have; expanded is the
// stream's showExpandedEvents.
func appendDetails(d bson.D, ev *Event, expanded bool) (bson.D, error) {
	switch {
	case ev.Op == OpUpdate:
		upd, err := decodeRaw(ev.Update)
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: "updateDescription", Value: disambiguated(upd, expanded)})
		if ev.Elements != nil {
			d = append(d, bson.E{Key: "expiredElements", Value: bson.D{
				{Key: "index", Value: ev.Elements.Index},
				{Key: "expireAfterSeconds", Value: ev.Elements.AfterSecs},
			}})
		}
	case ev.Op == OpRename:
		d = append(d, bson.E{Key: "to", Value: nsDoc(ev.ToDB, ev.ToColl)})
	case ev.Op == OpExpiring:
		d = append(d, bson.E{Key: "expiring", Value: bson.D{
			{Key: "index", Value: ev.Expired.Index},
			{Key: "expireAfterSeconds", Value: ev.Expired.AfterSecs},
			{Key: "expiresAt", Value: bson.DateTime(ev.Expired.AtMillis)},
		}})
	case ev.Expired != nil:
		exp, _ := expiredDoc(ev)
		d = append(d, bson.E{Key: "expired", Value: exp})
	case ev.Evicted != nil:
		d = append(d, bson.E{Key: "evicted", Value: bson.D{{Key: "index", Value: ev.Evicted.Index}}})
	}
	return d, nil
}

// disambiguated gives an updateDescription the disambiguatedPaths field
// as the stream reports it: with showExpandedEvents always ({} when no
// path is ambiguous), without it never.
func disambiguated(upd bson.D, expanded bool) bson.D {
	n := len(upd)
	if n > 0 && upd[n-1].Key == DisambiguatedPaths {
		if expanded {
			return upd
		}
		return upd[:n-1]
	}
	if expanded {
		return append(upd, bson.E{Key: DisambiguatedPaths, Value: bson.D{}})
	}
	return upd
}

// expiredDoc is a TTL deletion's expired field (ok false: the change is
// no TTL deletion).
func expiredDoc(ev *Event) (bson.D, bool) {
	if !carriesExpired(ev) {
		return nil, false
	}
	return bson.D{
		{Key: "index", Value: ev.Expired.Index},
		{Key: "expireAfterSeconds", Value: ev.Expired.AfterSecs},
		{Key: "expiredAt", Value: bson.DateTime(ev.Expired.AtMillis)},
	}, true
}

// carriesExpired reports whether the change's event has the expired
// field: a delete by the TTL monitor.
func carriesExpired(ev *Event) bool {
	return ev.Expired != nil && ev.Op == OpDelete
}

func nsDoc(db, coll string) bson.D {
	if coll == "" {
		return bson.D{{Key: "db", Value: db}}
	}
	return bson.D{{Key: "db", Value: db}, {Key: "coll", Value: coll}}
}

// eventID is the changed document's _id: from the event's copy of the
// document when it has one, else the event's own (Event.DocumentID).
func eventID(ev *Event, full bson.D) (any, error) {
	if id, ok := bsonutil.Field(full, "_id"); ok {
		return id, nil
	}
	return ev.DocumentID()
}

func decodeRaw(raw []byte) (bson.D, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return bsonutil.DecodeD(raw, 0)
}

// addImages adds fullDocument and fullDocumentBeforeChange as the
// stream's modes ask.
func (c *Stream) addImages(d bson.D, ev *Event, full bson.D) (bson.D, error) {
	if ev.Op > OpDelete {
		return d, nil
	}
	if ev.Op == OpUpdate {
		post, err := c.postImage(ev, full, d)
		if err != nil {
			return nil, err
		}
		if c.spec.FullDocument != "default" {
			d = append(d, bson.E{Key: "fullDocument", Value: post})
		}
	} else if ev.Op != OpDelete {
		d = append(d, bson.E{Key: "fullDocument", Value: full})
	}
	if c.spec.Before == "off" || ev.Op == OpInsert {
		return d, nil
	}
	pre, err := decodeRaw(ev.Pre)
	if err != nil {
		return nil, err
	}
	if pre == nil && c.spec.Before == "required" {
		return nil, mongoerr.Newf(mongoerr.NoMatchingDocument, "Change stream was configured to require a pre-image for all update, delete and replace events, but the pre-image was not found for event: %s", bsonutil.Format(d))
	}
	return append(d, bson.E{Key: "fullDocumentBeforeChange", Value: orNull(pre)}), nil
}

// postImage is an update's fullDocument: the current document for
// updateLookup, the stored post-image for whenAvailable and required.
func (c *Stream) postImage(ev *Event, stored, event bson.D) (any, error) {
	switch c.spec.FullDocument {
	case "updateLookup":
		return c.lookupCurrent(ev)
	case "required":
		if stored == nil {
			return nil, mongoerr.Newf(mongoerr.NoMatchingDocument, "Change stream was configured to require a post-image for all update, delete and replace events, but the post-image was not found for event: %s", bsonutil.Format(event))
		}
	}
	return orNull(stored), nil
}

// lookupCurrent reads the document an update changed as it is now (null
// when it is gone or expired), as updateLookup does on mongod.
func (c *Stream) lookupCurrent(ev *Event) (any, error) {
	id, err := eventID(ev, nil)
	if err != nil {
		return nil, err
	}
	doc, err := c.streams.host.Current(ev.DB, ev.Coll, id)
	if err != nil || doc == nil {
		return nil, err
	}
	return doc, nil
}

func orNull(d bson.D) any {
	if d == nil {
		return nil
	}
	return d
}

// txnFields are the fields mongod opens a transaction's event with.
func txnFields(ev *Event) bson.D {
	if len(ev.LSID) == 0 {
		return bson.D{}
	}
	return bson.D{{Key: "txnNumber", Value: ev.TxnNumber}, {Key: "lsid", Value: bson.Raw(ev.LSID)}}
}
