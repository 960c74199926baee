package mongoerr

import "go.mongodb.org/mongo-driver/v2/bson"

// Reply returns the command reply document for err:
// {ok: 0.0, errmsg, code, codeName, <extra fields>}, and the
// NonResumableChangeStreamError label mongod gives every reply whose
// code is of that category.
func Reply(err error) bson.D {
	e := As(err)
	d := bson.D{
		{Key: "ok", Value: 0.0},
		{Key: "errmsg", Value: e.Msg},
		{Key: "code", Value: int32(e.Code)},
		{Key: "codeName", Value: e.Code.Name()},
	}
	labelled := false
	for _, kv := range e.Extra {
		d = append(d, bson.E{Key: kv.Key, Value: kv.Value})
		labelled = labelled || kv.Key == "errorLabels"
	}
	if e.Code.IsNonResumableChangeStreamError() && !labelled {
		d = append(d, bson.E{Key: "errorLabels", Value: bson.A{"NonResumableChangeStreamError"}})
	}
	return d
}

// WriteError returns the writeErrors entry for err at batch position index:
// {index, code, errmsg, <extra fields>} (codeName is not part of it).
func WriteError(index int, err error) bson.D {
	e := As(err)
	d := bson.D{
		{Key: "index", Value: int32(index)},
		{Key: "code", Value: int32(e.Code)},
	}
	for _, kv := range e.Extra {
		d = append(d, bson.E{Key: kv.Key, Value: kv.Value})
	}
	return append(d, bson.E{Key: "errmsg", Value: e.Msg})
}

// BulkWriteItem is an operation's error as the bulkWrite command's
// reply lists it: {ok: 0, idx, code, errmsg, <extra>, n: 0}, and
// nModified: 0 for an update (kind "update").
func BulkWriteItem(idx int, kind string, err error) bson.D {
	e := As(err)
	d := bson.D{{Key: "ok", Value: 0.0}, {Key: "idx", Value: int32(idx)}, {Key: "code", Value: int32(e.Code)}, {Key: "errmsg", Value: e.Msg}}
	for _, kv := range e.Extra {
		d = append(d, bson.E{Key: kv.Key, Value: kv.Value})
	}
	d = append(d, bson.E{Key: "n", Value: int32(0)})
	if kind == "update" {
		d = append(d, bson.E{Key: "nModified", Value: int32(0)})
	}
	return d
}
