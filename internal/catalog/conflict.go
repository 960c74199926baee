package catalog

import (
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Comparison says how a requested index relates to an existing one.
type Comparison int

// The outcomes of comparing index definitions. Identifying options are the
// key pattern, unique, sparse and partialFilterExpression; the rest
// (expireAfterSeconds, refreshOnRead, lruLimit, hidden) are not
// identifying.
const (
	Different  Comparison = iota
	Equivalent            // same identifying options, other options differ
	Identical
)

// Compare compares two indexes by key and options, ignoring names.
func Compare(a, b *Index) Comparison {
	if bsonutil.Compare(a.KeyPattern(), b.KeyPattern()) != 0 || a.Unique != b.Unique || a.Sparse != b.Sparse {
		return Different
	}
	if bsonutil.Compare(a.Partial, b.Partial) != 0 || bsonutil.Compare(a.Collation, b.Collation) != 0 {
		return Different
	}
	if a.TTL != b.TTL || a.ExpireAfter != b.ExpireAfter || a.Hidden != b.Hidden || a.RefreshOnRead != b.RefreshOnRead ||
		a.LRUDocs != b.LRUDocs || a.LRUBytes != b.LRUBytes || a.ExpireElements != b.ExpireElements {
		return Equivalent
	}
	return Identical
}

// CheckNew decides whether ix may be added beside existing. It returns
// exists=true when an identical index is already there (createIndexes then
// answers "all indexes already exist"), or MongoDB's conflict error.
func CheckNew(existing []Index, ix *Index) (exists bool, err error) {
	for i := range existing {
		old := &existing[i]
		if old.Name == ix.Name {
			return sameName(old, ix)
		}
	}
	for i := range existing {
		old := &existing[i]
		switch Compare(old, ix) {
		case Identical:
			return false, mongoerr.Newf(mongoerr.IndexOptionsConflict, "Index already exists with a different name: %s", old.Name)
		case Equivalent:
			return false, mongoerr.Newf(mongoerr.IndexOptionsConflict, "An equivalent index already exists with a different name and options. Requested index: %s, existing index: %s", bsonutil.Format(ix.Spec), bsonutil.Format(old.Spec))
		}
	}
	return false, nil
}

func sameName(old, ix *Index) (bool, error) {
	switch Compare(old, ix) {
	case Identical:
		return true, nil
	case Equivalent:
		return false, mongoerr.Newf(mongoerr.IndexOptionsConflict, "An equivalent index already exists with the same name but different options. Requested index: %s, existing index: %s", bsonutil.Format(ix.Spec), bsonutil.Format(old.Spec))
	}
	return false, mongoerr.Newf(mongoerr.IndexKeySpecsConflict, "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: %s, existing index: %s", bsonutil.Format(ix.Spec), bsonutil.Format(old.Spec))
}

// CheckRequest refuses a createIndexes request that names the same index
// twice, as mongod does (IndexAlreadyExists) before looking at the
// collection.
func CheckRequest(ixs []*Index) error {
	for i, ix := range ixs {
		for _, prev := range ixs[:i] {
			if prev.Name == ix.Name && Compare(prev, ix) == Identical {
				return mongoerr.Newf(mongoerr.IndexAlreadyExists, "Identical index already exists: %s", ix.Name)
			}
		}
	}
	return nil
}
