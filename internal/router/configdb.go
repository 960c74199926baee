package router

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// majority is the write concern of every metadata write, as mongos's.
func majority() bson.D {
	return bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: int32(60000)}}
}

// configFind reads every document of config.<coll> matching filter, in
// sort order, following the cursor to its end.
func (r *Router) configFind(op *operation, coll string, filter, sort bson.D) ([]bson.D, error) {
	cmd := bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: orEmpty(filter)}}
	if len(sort) > 0 {
		cmd = append(cmd, bson.E{Key: "sort", Value: sort})
	}
	cmd = append(cmd, bson.E{Key: "readConcern", Value: bson.D{{Key: "level", Value: "majority"}}})
	reply, err := r.call(op, r.config, "config", cmd)
	if err != nil {
		return nil, err
	}
	return r.drain(op, r.config, "config", coll, reply)
}

// drain returns a cursor reply's documents and those of its getMores.
func (r *Router) drain(op *operation, rs *wireclient.ReplicaSet, db, coll string, reply bson.D) ([]bson.D, error) {
	var out []bson.D
	batchKey := "firstBatch"
	for {
		if err := wireclient.MongoError(reply); err != nil {
			return nil, err
		}
		cur := bsonutil.ToD(mustField(reply, "cursor"))
		for _, d := range bsonutil.ToA(mustField(cur, batchKey)) {
			out = append(out, bsonutil.ToD(d))
		}
		id, _ := bsonutil.Field(cur, "id")
		if n, _ := id.(int64); n == 0 {
			return out, nil
		}
		batchKey = "nextBatch"
		var err error
		reply, err = r.call(op, rs, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: coll}})
		if err != nil {
			return nil, err
		}
	}
}

// configWrite runs a write command on the config servers with majority
// write concern and turns a write error into the command's error.
func (r *Router) configWrite(op *operation, cmd bson.D) (bson.D, error) {
	cmd = append(cmd, bson.E{Key: "writeConcern", Value: majority()})
	reply, err := r.call(op, r.config, "config", cmd)
	if err != nil {
		return nil, err
	}
	if err := wireclient.MongoError(reply); err != nil {
		return nil, err
	}
	if werr := firstWriteError(reply); werr != nil {
		return nil, werr
	}
	if v, ok := bsonutil.Field(reply, "writeConcernError"); ok {
		d := bsonutil.ToD(v)
		msg, _ := bsonutil.Field(d, "errmsg")
		code, _ := bsonutil.Field(d, "code")
		n, _ := code.(int32)
		return nil, mongoerr.Newf(mongoerr.Code(n), "config write: %v", msg)
	}
	return reply, nil
}

func (r *Router) configInsert(op *operation, coll string, docs ...any) error {
	arr := make(bson.A, len(docs))
	copy(arr, docs)
	_, err := r.configWrite(op, bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: arr}, {Key: "ordered", Value: true}})
	if err != nil {
		return fmt.Errorf("insert into config.%s: %w", coll, err)
	}
	return nil
}

func (r *Router) configUpdate(op *operation, coll string, q, u bson.D, upsert bool) error {
	stmt := bson.D{{Key: "q", Value: q}, {Key: "u", Value: u}, {Key: "upsert", Value: upsert}}
	cmd := bson.D{{Key: "update", Value: coll}, {Key: "updates", Value: bson.A{stmt}}}
	_, err := r.configWrite(op, cmd)
	if me := mongoerr.As(err); upsert && err != nil && me.Code == mongoerr.DuplicateKey {
		// Two upserts raced to insert the document (the heartbeat and an
		// addShard, two routers): the loser's update now finds it.
		_, err = r.configWrite(op, cmd)
	}
	if err != nil {
		return fmt.Errorf("update config.%s: %w", coll, err)
	}
	return nil
}

func (r *Router) configDelete(op *operation, coll string, q bson.D) error {
	stmt := bson.D{{Key: "q", Value: q}, {Key: "limit", Value: int32(0)}}
	_, err := r.configWrite(op, bson.D{{Key: "delete", Value: coll}, {Key: "deletes", Value: bson.A{stmt}}})
	if err != nil {
		return fmt.Errorf("delete from config.%s: %w", coll, err)
	}
	return nil
}

// firstWriteError is a write reply's first writeErrors entry as an error.
func firstWriteError(reply bson.D) error {
	v, ok := bsonutil.Field(reply, "writeErrors")
	if !ok {
		return nil
	}
	arr := bsonutil.ToA(v)
	if len(arr) == 0 {
		return nil
	}
	d := bsonutil.ToD(arr[0])
	code, _ := bsonutil.Field(d, "code")
	msg, _ := bsonutil.Field(d, "errmsg")
	n, _ := code.(int32)
	s, _ := msg.(string)
	return mongoerr.New(mongoerr.Code(n), s)
}

func mustField(d bson.D, key string) any {
	v, _ := bsonutil.Field(d, key)
	return v
}

func orEmpty(d bson.D) bson.D {
	if d == nil {
		return bson.D{}
	}
	return d
}
