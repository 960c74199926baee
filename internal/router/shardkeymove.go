package router

import (
	"errors"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// movedDoc is a document an update moved to the shard owning its new
// shard key value.
type movedDoc struct {
	pre, post bson.D
	upsert    bool // the update's upsert inserted post; there was no pre
}

// updateReply is what an update statement answers for the move.
func (m movedDoc) updateReply() bson.D {
	if m.upsert {
		id, _ := bsonutil.Field(m.post, "_id")
		return bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(0)},
			{Key: "upserted", Value: bson.A{bson.D{{Key: "index", Value: int32(0)}, {Key: "_id", Value: id}}}}}
	}
	return bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}}
}

// findAndModifyReply is what a findAndModify answers for the move.
func (m movedDoc) findAndModifyReply(body bson.D) bson.D {
	returnNew, _ := bsonutil.Field(body, "new")
	var value any
	if bsonutil.TrueValue(returnNew) {
		value = m.post
	} else if !m.upsert {
		value = m.pre
	}
	last := bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: !m.upsert}}
	if m.upsert {
		id, _ := bsonutil.Field(m.post, "_id")
		last = append(last, bson.E{Key: "upserted", Value: id})
	}
	return bson.D{{Key: "lastErrorObject", Value: last}, {Key: "value", Value: value}}
}

// changeOwningShard carries out an update a shard answered with
// WouldChangeOwningShard (info holds its preImage, postImage and
// shouldUpsert), as statement stmt of the client's write. An upsert's
// document is inserted on the shard owning its key. A document that
// exists is moved by the shard holding it (_shardsvrMoveDocument,
// internal/shardstate's MoveDocument), which records the move, inserts
// the new document on the owner and deletes its own copy with the
// statement's retry record: a crash of either shard or of this router
// leaves one copy, and a retry answers the first attempt's result.
// mongos does the same in an internal transaction.
func (r *Router) changeOwningShard(op *operation, p placement, from target, info bson.D, stmt any) (movedDoc, error) {
	m := movedDoc{pre: bsonutil.ToD(mustField(info, "preImage")), post: bsonutil.ToD(mustField(info, "postImage"))}
	upsert, _ := bsonutil.Field(info, "shouldUpsert")
	m.upsert = bsonutil.TrueValue(upsert)
	to, err := r.ownerOf(op, p, m.post)
	if err != nil {
		return movedDoc{}, err
	}
	if m.upsert {
		return m, r.writeOne(op, to, "insert", "documents", m.post)
	}
	statement := "update"
	if strings.EqualFold(op.name, "findAndModify") {
		statement = "findAndModify"
	}
	cmd := bson.D{{Key: "_shardsvrMoveDocument", Value: p.ns}, {Key: "toShard", Value: to.shard},
		{Key: "preImage", Value: m.pre}, {Key: "postImage", Value: m.post}, {Key: "statement", Value: statement}}
	if v, ok := bsonutil.Field(op.body, "lsid"); ok {
		cmd = append(cmd, bson.E{Key: "lsid", Value: v})
	}
	if v, ok := bsonutil.Field(op.body, "txnNumber"); ok {
		cmd = append(cmd, bson.E{Key: "txnNumber", Value: v}, bson.E{Key: "stmtIds", Value: bson.A{stmt}})
	}
	reply, err := r.call(op, from.rs, "admin", cmd)
	if err == nil {
		err = wireclient.MongoError(reply)
	}
	if err != nil {
		return movedDoc{}, err
	}
	return m, nil
}

// ownerOf is the target owning doc's shard key.
func (r *Router) ownerOf(op *operation, p placement, doc bson.D) (target, error) {
	h, err := p.table.Pattern().HashOf(doc)
	if err != nil {
		return target{}, err
	}
	c, _ := p.table.ChunkForHash(h)
	ts, err := r.resolve(op, p, []string{c.Shard})
	if err != nil {
		return target{}, err
	}
	return ts[0], nil
}

func (r *Router) writeOne(op *operation, t target, name, arrayKey string, item bson.D) error {
	_, err := r.writeOneReply(op, t, name, arrayKey, item)
	return err
}

// writeOneReply sends a one-statement write of the client's collection
// to t with the client's write concern, its write error as the error.
func (r *Router) writeOneReply(op *operation, t target, name, arrayKey string, item bson.D) (bson.D, error) {
	cmd := bson.D{{Key: name, Value: collectionName(op)}, {Key: arrayKey, Value: bson.A{item}}}
	if wc, ok := bsonutil.Field(op.body, "writeConcern"); ok {
		cmd = append(cmd, bson.E{Key: "writeConcern", Value: wc})
	}
	reply, err := r.sendOK(op, t, cmd)
	if errors.Is(err, errStale) {
		return nil, mongoerr.Newf(mongoerr.StaleConfig, "routing information for %s changed while an update moved a document between shards", t.db+"."+collectionName(op))
	}
	if err != nil {
		return nil, err
	}
	if wes := bsonutil.ToA(mustField(reply, "writeErrors")); len(wes) > 0 {
		we := bsonutil.ToD(wes[0])
		msg, _ := mustField(we, "errmsg").(string)
		return nil, mongoerr.New(codeOf(we), msg)
	}
	return reply, nil
}

// collectionName is the collection a client's write command names.
func collectionName(op *operation) string {
	name, _ := op.body[0].Value.(string)
	return name
}
