package update

import (
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// UpsertSeed builds the base document for an upsert insert from the
// query's equality fields (path → value, already extracted by the caller):
// dotted paths build nested documents, and _id comes first. Two paths where
// one is a prefix of the other cannot both be honoured.
func UpsertSeed(equalities bson.D) (bson.D, error) {
	if err := checkSeedPaths(equalities); err != nil {
		return nil, err
	}
	root := &mdoc{}
	for _, e := range equalities {
		if err := seedPath(root, e); err != nil {
			return nil, err
		}
	}
	return idFirst(finish(root).(bson.D)), nil
}

func checkSeedPaths(eqs bson.D) error {
	seen := make([][]string, 0, len(eqs))
	for _, e := range eqs {
		parts, err := splitPath(e.Key)
		if err != nil {
			return err
		}
		for j, prev := range seen {
			if err := seedConflict(eqs[j].Key, prev, e.Key, parts); err != nil {
				return err
			}
		}
		seen = append(seen, parts)
	}
	return nil
}

func seedConflict(prevPath string, prev []string, path string, parts []string) error {
	const msg = "cannot infer query fields to set, "
	switch {
	case len(prev) == len(parts) && isPrefix(prev, parts):
		return errf(mongoerr.NotSingleValueField, msg+"path '%s' is matched twice", path)
	case isPrefix(prev, parts):
		return errf(mongoerr.NotSingleValueField, msg+"both paths '%s' and '%s' are matched", path, prevPath)
	case isPrefix(parts, prev):
		return errf(mongoerr.NotSingleValueField, msg+"both paths '%s' and '%s' are matched", prevPath, path)
	}
	return nil
}

// seedPath sets one equality, descending through (and creating) documents.
func seedPath(root *mdoc, e bson.E) error {
	parts, _ := splitPath(e.Key)
	st := &state{elem: root}
	for _, p := range parts {
		st = st.child(p)
	}
	if len(st.create) == 0 {
		st.set(e.Value)
		return nil
	}
	return st.attach(e.Value)
}
