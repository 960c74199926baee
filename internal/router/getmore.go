package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// shardStream reads one shard's cursor, asking for more as it empties.
// op is the client operation on whose behalf it reads now: a getMore's
// context and session differ from the find's.
type shardStream struct {
	op   *operation
	r    *Router
	rs   *wireclient.ReplicaSet
	db   string
	coll string
	id   int64
	buf  []bson.D
}

// newShardStream reads a cursor reply's first batch.
func (r *Router) newShardStream(op *operation, rs *wireclient.ReplicaSet, reply bson.D) *shardStream {
	cur := bsonutil.ToD(mustField(reply, "cursor"))
	s := &shardStream{op: op, r: r, rs: rs, db: op.db}
	ns, _ := bsonutil.Field(cur, "ns")
	nsName, _ := ns.(string)
	_, s.coll = splitNS(nsName)
	id, _ := bsonutil.Field(cur, "id")
	s.id, _ = id.(int64)
	for _, d := range bsonutil.ToA(mustField(cur, "firstBatch")) {
		s.buf = append(s.buf, bsonutil.ToD(d))
	}
	return s
}

func (s *shardStream) Next() (bson.D, bool, error) {
	for len(s.buf) == 0 {
		if s.id == 0 {
			return nil, false, nil
		}
		if err := s.fetch(); err != nil {
			return nil, false, err
		}
	}
	doc := s.buf[0]
	s.buf = s.buf[1:]
	return doc, true, nil
}

// fetch runs a getMore on the shard, in the client's session.
func (s *shardStream) fetch() error {
	cmd := bson.D{{Key: "getMore", Value: s.id}, {Key: "collection", Value: s.coll}}
	if lsid, ok := bsonutil.Field(s.op.body, "lsid"); ok {
		cmd = append(cmd, bson.E{Key: "lsid", Value: lsid})
	}
	reply, err := s.r.call(s.op, s.rs, s.db, cmd)
	if err != nil {
		return err
	}
	if err := wireclient.MongoError(reply); err != nil {
		s.id = 0
		return err
	}
	cur := bsonutil.ToD(mustField(reply, "cursor"))
	id, _ := bsonutil.Field(cur, "id")
	s.id, _ = id.(int64)
	for _, d := range bsonutil.ToA(mustField(cur, "nextBatch")) {
		s.buf = append(s.buf, bsonutil.ToD(d))
	}
	return nil
}

func (s *shardStream) Close() error {
	if s.id != 0 {
		killOne(s.op, s.rs, s.db, s.coll, s.id)
		s.id = 0
	}
	return nil
}

// firstBatch answers a merged query: the first batch, and a router cursor
// if more remain.
func (r *Router) firstBatch(op *operation, ns string, m *mergedCursor, batchSize int64, single bool) (bson.D, error) {
	batch, more, err := bson.A{}, true, error(nil)
	if batchSize != 0 { // 0 opens the cursor without reading
		batch, more, err = m.fill(batchSize)
	}
	if err != nil {
		_ = m.out.Close()
		return nil, err
	}
	var id int64
	if more && !single {
		c := &routerCursor{ns: ns, merged: m}
		r.register(op, c)
		id = c.id
	} else {
		_ = m.out.Close()
	}
	return cursorReply(ns, id, "firstBatch", batch), nil
}

// fill reads up to n documents (0: no count limit) within maxBatchBytes
// and reports whether more may follow.
func (m *mergedCursor) fill(n int64) (bson.A, bool, error) {
	batch := bson.A{}
	var bytes int
	for n <= 0 || int64(len(batch)) < n {
		doc := m.held
		m.held = nil
		if doc == nil {
			var ok bool
			var err error
			if doc, ok, err = m.out.Next(); err != nil {
				return nil, false, err
			} else if !ok {
				return batch, false, nil
			}
		}
		size := docSize(doc)
		if len(batch) > 0 && bytes+size > maxBatchBytes {
			m.held = doc
			return batch, true, nil
		}
		bytes += size
		batch = append(batch, doc)
	}
	return batch, true, nil
}

func docSize(doc bson.D) int {
	raw, err := bsonutil.Marshal(doc)
	if err != nil {
		return 0
	}
	return len(raw)
}

func cursorReply(ns string, id int64, key string, batch bson.A) bson.D {
	return bson.D{{Key: "cursor", Value: bson.D{
		{Key: key, Value: batch}, {Key: "id", Value: id}, {Key: "ns", Value: ns},
	}}}
}

// cmdGetMore continues a router cursor: a passed-through cursor asks its
// shard, a merged one reads on through its shards' streams.
func cmdGetMore(r *Router, op *operation) (bson.D, error) {
	id, ok := op.body[0].Value.(int64)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field 'getMore.getMore' is the wrong type '%s', expected type 'long'", bsonutil.TypeName(op.body[0].Value))
	}
	coll, _ := bsonutil.Field(op.body, "collection")
	name, _ := coll.(string)
	ns := op.db + "." + name
	c, err := r.cursors.checkOut(id, ns)
	if err != nil {
		return nil, err
	}
	if err := r.auth.CheckGetMore(op.conn, id, c.owner, c.privileges); err != nil {
		r.cursors.checkIn(c, false)
		return nil, err
	}
	if err := checkCursorSession(op, r.auth.UserOf(op.conn), c); err != nil {
		r.cursors.checkIn(c, false)
		return nil, err
	}
	if err := r.failGetMore(op, c); err != nil {
		return nil, err
	}
	if c.remote != nil {
		reply, done, err := r.remoteGetMore(op, c)
		r.cursors.checkIn(c, done)
		return reply, err
	}
	if c.stream != nil {
		reply, err := r.streamGetMore(op, c)
		r.cursors.checkIn(c, err != nil || c.stream.ended)
		return reply, err
	}
	for _, s := range c.merged.streams {
		s.op = op
	}
	batchSize, _ := bsonutil.Field(op.body, "batchSize")
	batch, more, err := c.merged.fill(toInt64(batchSize))
	r.cursors.checkIn(c, err != nil || !more)
	if err != nil || !more {
		_ = c.merged.out.Close()
	}
	if err != nil {
		return nil, err
	}
	if !more {
		id = 0
	}
	return cursorReply(ns, id, "nextBatch", batch), nil
}

// remoteGetMore forwards a getMore with the shard's cursor id and answers
// with the router's.
func (r *Router) remoteGetMore(op *operation, c *routerCursor) (bson.D, bool, error) {
	cmd := passThrough(op.body)
	cmd[0].Value = c.remote.id
	reply, err := r.call(op, c.remote.rs, c.remote.db, cmd)
	if err != nil {
		return nil, true, err
	}
	reply = forwardable(reply)
	if err := wireclient.MongoError(reply); err != nil {
		return reply, true, nil
	}
	cur := bsonutil.ToD(mustField(reply, "cursor"))
	id, _ := bsonutil.Field(cur, "id")
	done := id == int64(0)
	if !done {
		cur = bsonutil.WithField(cur, "id", c.id)
	}
	return bsonutil.WithField(reply, "cursor", cur), done, nil
}

// cmdKillCursors kills router cursors and their shard cursors.
func cmdKillCursors(r *Router, op *operation) (bson.D, error) {
	ids, _ := bsonutil.Field(op.body, "cursors")
	for _, v := range bsonutil.ToA(ids) {
		// None is killed when one is another user's, as on mongod.
		id, _ := v.(int64)
		if owner, ns, ok := r.cursors.lookup(id); ok && !r.auth.MayKillCursor(op.conn, owner, ns) {
			return nil, auth.CursorError(id)
		}
	}
	killed, notFound := bson.A{}, bson.A{}
	for _, v := range bsonutil.ToA(ids) {
		id, _ := v.(int64)
		c, ok := r.cursors.remove(id)
		if !ok {
			notFound = append(notFound, v)
			continue
		}
		r.killRemote(op, c)
		killed = append(killed, id)
	}
	return bson.D{{Key: "cursorsKilled", Value: killed}, {Key: "cursorsNotFound", Value: notFound},
		{Key: "cursorsAlive", Value: bson.A{}}, {Key: "cursorsUnknown", Value: bson.A{}}}, nil
}
