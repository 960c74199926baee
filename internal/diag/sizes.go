package diag

import (
	"syscall"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
)

// Sizes are one collection's figures, unscaled.
type Sizes struct {
	Count, Size, Storage, TotalIndex int64
	Indexes                          bson.D // name → bytes, in catalog order
}

// SizesOf measures a collection.
func SizesOf(c *docstore.Collection) (Sizes, error) {
	s := Sizes{Count: c.Count(), Size: c.DataSize()}
	var err error
	if s.Storage, err = c.StorageSize(); err != nil {
		return s, err
	}
	byName, err := c.IndexSizes()
	if err != nil {
		return s, err
	}
	for _, ix := range c.Indexes() {
		n := byName[ix.Name]
		s.TotalIndex += n
		s.Indexes = append(s.Indexes, bson.E{Key: ix.Name, Value: n})
	}
	return s, nil
}

func (s Sizes) avgObjSize() int64 {
	if s.Count == 0 {
		return 0
	}
	return s.Size / s.Count
}

// Shape is what collStats reports of a collection beside its sizes.
type Shape struct {
	Capped       bool
	Max, MaxSize int64
	NIndexes     int32
	// Builds are the names of the indexes being built.
	Builds bson.A
}

// ShapeOf reads a collection's shape from its catalog entry.
func ShapeOf(c *docstore.Collection) Shape {
	m := c.Meta()
	builds := bson.A{}
	for _, ix := range m.Indexes {
		if !ix.Ready {
			builds = append(builds, ix.Name)
		}
	}
	return Shape{Capped: m.Capped, Max: m.CappedMax, MaxSize: m.CappedSize, NIndexes: int32(len(m.Indexes)), Builds: builds}
}

// EmptyCollStats is mongod's collStats for a collection that does not
// exist.
func EmptyCollStats(ns string, scale int64) bson.D {
	return bson.D{
		{Key: "ns", Value: ns}, {Key: "size", Value: int64(0)}, {Key: "count", Value: int64(0)},
		{Key: "numOrphanDocs", Value: int64(0)}, {Key: "storageSize", Value: int64(0)},
		{Key: "totalSize", Value: int64(0)}, {Key: "nindexes", Value: int32(0)},
		{Key: "totalIndexSize", Value: int64(0)}, {Key: "indexDetails", Value: bson.D{}},
		{Key: "indexSizes", Value: bson.D{}}, {Key: "scaleFactor", Value: int32(scale)},
	}
}

func (s Shape) builds() bson.A {
	if s.Builds == nil {
		return bson.A{}
	}
	return s.Builds
}

// StorageStats is collStats' figures (and $collStats' storageStats),
// divided by scale, after the given leading fields.
func StorageStats(s Sizes, shape Shape, scale int64, head bson.D) bson.D {
	scaled := bson.D{}
	for _, e := range s.Indexes {
		scaled = append(scaled, bson.E{Key: e.Key, Value: docstore.Num(e.Value.(int64) / scale)})
	}
	out := append(head,
		bson.E{Key: "size", Value: docstore.Num(s.Size / scale)},
		bson.E{Key: "count", Value: docstore.Num(s.Count)},
		bson.E{Key: "avgObjSize", Value: docstore.Num(s.avgObjSize())},
		bson.E{Key: "numOrphanDocs", Value: int32(0)},
		bson.E{Key: "storageSize", Value: docstore.Num(s.Storage / scale)},
		bson.E{Key: "freeStorageSize", Value: int32(0)},
		bson.E{Key: "capped", Value: shape.Capped},
	)
	if shape.Capped {
		out = append(out, bson.E{Key: "max", Value: shape.Max}, bson.E{Key: "maxSize", Value: shape.MaxSize / scale})
	}
	return append(out,
		bson.E{Key: "nindexes", Value: shape.NIndexes},
		bson.E{Key: "indexDetails", Value: bson.D{}},
		bson.E{Key: "indexBuilds", Value: shape.builds()},
		bson.E{Key: "totalIndexSize", Value: docstore.Num(s.TotalIndex / scale)},
		bson.E{Key: "totalSize", Value: docstore.Num((s.Storage + s.TotalIndex) / scale)},
		bson.E{Key: "indexSizes", Value: scaled},
		bson.E{Key: "scaleFactor", Value: int32(scale)},
	)
}

// DBStats is dbStats' figures for db, divided by scale; dataDir is the
// data directory whose filesystem it reports, "" when in memory.
func DBStats(store *docstore.Store, db string, scale int64, dataDir string) (bson.D, error) {
	var total Sizes
	var colls, indexes int64
	for _, name := range store.CollectionNames(db) {
		c := store.Collection(db, name)
		if c == nil {
			continue
		}
		s, err := SizesOf(c)
		if err != nil {
			return nil, err
		}
		colls++
		indexes += int64(len(s.Indexes))
		total.Count += s.Count
		total.Size += s.Size
		total.Storage += s.Storage
		total.TotalIndex += s.TotalIndex
	}
	out := bson.D{
		{Key: "db", Value: db},
		{Key: "collections", Value: docstore.Num(colls)},
		{Key: "views", Value: int32(0)},
		{Key: "objects", Value: docstore.Num(total.Count)},
		{Key: "avgObjSize", Value: float64(total.avgObjSize())},
		{Key: "dataSize", Value: float64(total.Size / scale)},
		{Key: "storageSize", Value: float64(total.Storage / scale)},
		{Key: "indexes", Value: docstore.Num(indexes)},
		{Key: "indexSize", Value: float64(total.TotalIndex / scale)},
		{Key: "totalSize", Value: float64((total.Storage + total.TotalIndex) / scale)},
		{Key: "scaleFactor", Value: float64(scale)},
	}
	if used, size, ok := filesystemSize(dataDir); ok {
		out = append(out, bson.E{Key: "fsUsedSize", Value: float64(used / scale)}, bson.E{Key: "fsTotalSize", Value: float64(size / scale)})
	}
	return out, nil
}

// filesystemSize reports the used and total bytes of the filesystem that
// holds dir; not ok when the server runs in memory (dir is "").
func filesystemSize(dir string) (used, total int64, ok bool) {
	if dir == "" {
		return 0, 0, false
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	bs := int64(st.Bsize)
	total = int64(st.Blocks) * bs
	return total - int64(st.Bfree)*bs, total, true
}
