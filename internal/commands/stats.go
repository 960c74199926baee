package commands

import (
	"sort"
	"strings"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/opstats"
)

// collSizes are one collection's figures, unscaled.
type collSizes struct {
	count, size, storage, totalIndex int64
	indexes                          bson.D // name → bytes, in catalog order
}

func sizesOf(c *docstore.Collection) (collSizes, error) {
	s := collSizes{count: c.Count(), size: c.DataSize()}
	var err error
	if s.storage, err = c.StorageSize(); err != nil {
		return s, err
	}
	byName, err := c.IndexSizes()
	if err != nil {
		return s, err
	}
	for _, ix := range c.Indexes() {
		n := byName[ix.Name]
		s.totalIndex += n
		s.indexes = append(s.indexes, bson.E{Key: ix.Name, Value: n})
	}
	return s, nil
}

func (s collSizes) avgObjSize() int64 {
	if s.count == 0 {
		return 0
	}
	return s.size / s.count
}

// scaleArg reads the scale field (default 1); MongoDB refuses one below 1.
func scaleArg(r *request) (int64, error) {
	v, ok := bsonutil.Field(r.body, "scale")
	if !ok {
		return 1, nil
	}
	n, err := toInt64(r.name, "scale", v)
	if err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, mongoerr.New(mongoerr.BadValue, "scale has to be >= 1")
	}
	return n, nil
}

func cmdCollStats(h *Handler, r *request) (bson.D, error) {
	if err := checkFields(r, "scale", "verbose"); err != nil {
		return nil, err
	}
	coll, err := collectionArg(r)
	if err != nil {
		return nil, err
	}
	scale, err := scaleArg(r)
	if err != nil {
		return nil, err
	}
	ns := r.db + "." + coll
	out, found, err := h.storageStats(r.db, coll, scale, bson.D{{Key: "ns", Value: ns}})
	if !found {
		return emptyCollStats(ns, scale), nil
	}
	return out, err
}

// emptyCollStats is mongod's answer for a collection that does not exist.
func emptyCollStats(ns string, scale int64) bson.D {
	return bson.D{
		{Key: "ns", Value: ns}, {Key: "size", Value: int64(0)}, {Key: "count", Value: int64(0)},
		{Key: "numOrphanDocs", Value: int64(0)}, {Key: "storageSize", Value: int64(0)},
		{Key: "totalSize", Value: int64(0)}, {Key: "nindexes", Value: int32(0)},
		{Key: "totalIndexSize", Value: int64(0)}, {Key: "indexDetails", Value: bson.D{}},
		{Key: "indexSizes", Value: bson.D{}}, {Key: "scaleFactor", Value: int32(scale)},
	}
}

// collShape is what collStats reports of a collection beside its sizes.
type collShape struct {
	capped       bool
	max, maxSize int64
	nindexes     int32
}

func shapeOf(c *docstore.Collection) collShape {
	m := c.Meta()
	return collShape{capped: m.Capped, max: m.CappedMax, maxSize: m.CappedSize, nindexes: int32(len(m.Indexes))}
}

// storageStats is collStats' reply (and $collStats' storageStats) for
// db.coll, a collection or a local view (localdb.go), after the given
// leading fields; found is false when there is neither.
func (h *Handler) storageStats(db, coll string, scale int64, head bson.D) (out bson.D, found bool, err error) {
	var s collSizes
	var shape collShape
	if h.localView(db, coll) {
		s, shape, err = h.localSizes(coll)
	} else if c := h.deps.Store.Collection(db, coll); c != nil {
		s, err = sizesOf(c)
		shape = shapeOf(c)
	} else {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return storageStatsReply(s, shape, scale, head), true, nil
}

// docCount is db.coll's document count as collStats gives it, without
// the sizes' scans.
func (h *Handler) docCount(db, coll string) (int64, error) {
	if h.localView(db, coll) {
		s, _, err := h.localSizes(coll)
		return s.count, err
	}
	if c := h.deps.Store.Collection(db, coll); c != nil {
		return c.Count(), nil
	}
	return 0, nil
}

func storageStatsReply(s collSizes, shape collShape, scale int64, head bson.D) bson.D {
	scaled := bson.D{}
	for _, e := range s.indexes {
		scaled = append(scaled, bson.E{Key: e.Key, Value: docstore.Num(e.Value.(int64) / scale)})
	}
	out := append(head,
		bson.E{Key: "size", Value: docstore.Num(s.size / scale)},
		bson.E{Key: "count", Value: docstore.Num(s.count)},
		bson.E{Key: "avgObjSize", Value: docstore.Num(s.avgObjSize())},
		bson.E{Key: "numOrphanDocs", Value: int32(0)},
		bson.E{Key: "storageSize", Value: docstore.Num(s.storage / scale)},
		bson.E{Key: "freeStorageSize", Value: int32(0)},
		bson.E{Key: "capped", Value: shape.capped},
	)
	if shape.capped {
		out = append(out, bson.E{Key: "max", Value: shape.max}, bson.E{Key: "maxSize", Value: shape.maxSize / scale})
	}
	return append(out,
		bson.E{Key: "nindexes", Value: shape.nindexes},
		bson.E{Key: "indexDetails", Value: bson.D{}},
		bson.E{Key: "indexBuilds", Value: bson.A{}},
		bson.E{Key: "totalIndexSize", Value: docstore.Num(s.totalIndex / scale)},
		bson.E{Key: "totalSize", Value: docstore.Num((s.storage + s.totalIndex) / scale)},
		bson.E{Key: "indexSizes", Value: scaled},
		bson.E{Key: "scaleFactor", Value: int32(scale)},
	)
}

func cmdDBStats(h *Handler, r *request) (bson.D, error) {
	if err := checkFields(r, "scale", "freeStorage"); err != nil {
		return nil, err
	}
	scale, err := scaleArg(r)
	if err != nil {
		return nil, err
	}
	var total collSizes
	var colls, indexes int64
	for _, name := range h.deps.Store.CollectionNames(r.db) {
		c := h.deps.Store.Collection(r.db, name)
		if c == nil {
			continue
		}
		s, err := sizesOf(c)
		if err != nil {
			return nil, err
		}
		colls++
		indexes += int64(len(s.indexes))
		total.count += s.count
		total.size += s.size
		total.storage += s.storage
		total.totalIndex += s.totalIndex
	}
	out := bson.D{
		{Key: "db", Value: r.db},
		{Key: "collections", Value: docstore.Num(colls)},
		{Key: "views", Value: int32(0)},
		{Key: "objects", Value: docstore.Num(total.count)},
		{Key: "avgObjSize", Value: float64(total.avgObjSize())},
		{Key: "dataSize", Value: float64(total.size / scale)},
		{Key: "storageSize", Value: float64(total.storage / scale)},
		{Key: "indexes", Value: docstore.Num(indexes)},
		{Key: "indexSize", Value: float64(total.totalIndex / scale)},
		{Key: "totalSize", Value: float64((total.storage + total.totalIndex) / scale)},
		{Key: "scaleFactor", Value: float64(scale)},
	}
	if used, size, ok := h.filesystemSize(); ok {
		out = append(out, bson.E{Key: "fsUsedSize", Value: float64(used / scale)}, bson.E{Key: "fsTotalSize", Value: float64(size / scale)})
	}
	return out, nil
}

// filesystemSize reports the used and total bytes of the filesystem that
// holds the data directory; not ok when the server runs in memory.
func (h *Handler) filesystemSize() (used, total int64, ok bool) {
	if h.deps.DataDir == "" {
		return 0, 0, false
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(h.deps.DataDir, &st); err != nil {
		return 0, 0, false
	}
	bs := int64(st.Bsize)
	total = int64(st.Blocks) * bs
	return total - int64(st.Bfree)*bs, total, true
}

func cmdDataSize(h *Handler, r *request) (bson.D, error) {
	if err := checkFields(r, "keyPattern", "min", "max", "estimate"); err != nil {
		return nil, err
	}
	ns, ok := r.body[0].Value.(string)
	if !ok {
		return nil, wrongType(r.name, r.name, r.body[0].Value, "string")
	}
	db, coll, _ := strings.Cut(ns, ".")
	started := h.deps.Clock.Now()
	c := h.deps.Store.Collection(db, coll)
	if c == nil {
		return bson.D{{Key: "size", Value: int64(0)}, {Key: "numObjects", Value: int64(0)}, {Key: "millis", Value: int64(0)}}, nil
	}
	bounds, err := dataSizeBounds(r)
	if err != nil {
		return nil, err
	}
	var size, n int64
	if bounds == nil {
		size, n = c.DataSize(), c.Count()
	} else if size, n, err = bounds.measure(r, c); err != nil {
		return nil, err
	}
	millis := h.deps.Clock.Now().Sub(started).Milliseconds()
	return bson.D{{Key: "size", Value: size}, {Key: "numObjects", Value: n}, {Key: "millis", Value: millis}}, nil
}

// keyRange is dataSize's [min, max) over keyPattern's fields.
type keyRange struct {
	pattern  bson.D
	min, max bson.D
}

func dataSizeBounds(r *request) (*keyRange, error) {
	kp, hasKP := bsonutil.Field(r.body, "keyPattern")
	lo, hasMin := bsonutil.Field(r.body, "min")
	hi, hasMax := bsonutil.Field(r.body, "max")
	if !hasMin && !hasMax {
		return nil, nil
	}
	pattern, ok := kp.(bson.D)
	if !hasKP || !ok || len(pattern) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "need a valid keyPattern with min and max")
	}
	return &keyRange{pattern: pattern, min: bsonutil.ToD(lo), max: bsonutil.ToD(hi)}, nil
}

// measure adds up the documents whose key lies in the range.
func (k *keyRange) measure(r *request, c *docstore.Collection) (size, n int64, err error) {
	it := c.Scan(nil, nil).WithContext(r.ctx)
	defer it.Close()
	for {
		doc, ok, err := it.Next()
		if err != nil {
			return 0, 0, interruptError(err)
		}
		if !ok {
			return size, n, nil
		}
		if k.contains(doc) {
			raw, _ := bson.Marshal(doc)
			size += int64(len(raw))
			n++
		}
	}
}

func (k *keyRange) contains(doc bson.D) bool {
	key := bson.D{}
	for _, f := range k.pattern {
		v, _ := bsonutil.LookupPath(doc, f.Key)
		key = append(key, bson.E{Key: f.Key, Value: v})
	}
	return (len(k.min) == 0 || compareKey(key, k.min) >= 0) && (len(k.max) == 0 || compareKey(key, k.max) < 0)
}

// compareKey compares key values in order, ignoring field names, as
// mongod compares a key with min and max.
func compareKey(key, bound bson.D) int {
	for i := range min(len(key), len(bound)) {
		if c := bsonutil.Compare(key[i].Value, bound[i].Value); c != 0 {
			return c
		}
	}
	return 0
}

// cmdTop is mongotop's source: time and count per namespace and kind, in
// microseconds, since the server started.
func cmdTop(h *Handler, r *request) (bson.D, error) {
	if r.db != "admin" {
		return nil, mongoerr.New(mongoerr.Unauthorized, "top may only be run against the admin database.")
	}
	all := h.deps.OpStats.Namespaces()
	names := make([]string, 0, len(all))
	for ns := range all {
		names = append(names, ns)
	}
	sort.Strings(names)
	totals := bson.D{{Key: "note", Value: "all times in microseconds"}}
	for _, ns := range names {
		n := all[ns]
		totals = append(totals, bson.E{Key: ns, Value: bson.D{
			{Key: "total", Value: timedDoc(n.Total)},
			{Key: "readLock", Value: timedDoc(n.ReadLock)},
			{Key: "writeLock", Value: timedDoc(n.WriteLock)},
			{Key: "queries", Value: timedDoc(n.Kinds[opstats.KindQuery])},
			{Key: "getmore", Value: timedDoc(n.Kinds[opstats.KindGetMore])},
			{Key: "insert", Value: timedDoc(n.Kinds[opstats.KindInsert])},
			{Key: "update", Value: timedDoc(n.Kinds[opstats.KindUpdate])},
			{Key: "remove", Value: timedDoc(n.Kinds[opstats.KindRemove])},
			{Key: "commands", Value: timedDoc(n.Kinds[opstats.KindCommand])},
		}})
	}
	return bson.D{{Key: "totals", Value: totals}}, nil
}

func timedDoc(t opstats.Timed) bson.D {
	return bson.D{{Key: "time", Value: t.Time.Microseconds()}, {Key: "count", Value: t.Count}}
}

// recordStats files a finished command in the operation statistics.
func (h *Handler) recordStats(r *request, d time.Duration, err error) {
	ns := namespaceOf(r)
	if r.name == "getMore" {
		if coll, ok := bsonutil.Field(r.body, "collection"); ok {
			if s, isStr := coll.(string); isStr {
				ns = r.db + "." + s
			}
		}
	}
	internal := false
	if err != nil {
		internal = mongoerr.As(clientError(err)).Code == mongoerr.InternalError
	}
	h.deps.OpStats.Record(r.name, ns, d, err != nil, internal)
}
