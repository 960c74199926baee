package docstore

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
)

// A write that stores an array on an index's key path makes the index
// multikey. The new paths are written to the catalog in the same batch as
// the document, so no index ever holds an array entry that its definition
// does not admit (the planner relies on it for tight bounds).

// arrayPrefixes returns the prefixes of path ("a", "a.b") at which doc
// holds an array, as MongoDB's multiKeyPaths lists them.
func arrayPrefixes(doc bson.D, path string) []string {
	if !strings.Contains(path, ".") {
		// A top-level field, on every write's path: no split needed.
		if v, _ := bsonutil.Lookup(doc, path); isBSONArray(v) {
			return []string{path}
		}
		return nil
	}
	var out []string
	walkArrays(doc, strings.Split(path, "."), 0, &out)
	return out
}

func walkArrays(v any, parts []string, depth int, out *[]string) {
	switch x := v.(type) {
	case bson.A:
		if depth > 0 {
			addPrefix(out, strings.Join(parts[:depth], "."))
		}
		for _, e := range x {
			if d, ok := e.(bson.D); ok && depth < len(parts) {
				walkArrays(d, parts, depth, out)
			}
		}
	case bson.D:
		if depth == len(parts) {
			return
		}
		for _, e := range x {
			if e.Key == parts[depth] {
				walkArrays(e.Value, parts, depth+1, out)
				return
			}
		}
	}
}

func isBSONArray(v any) bool {
	_, ok := v.(bson.A)
	return ok
}

func addPrefix(out *[]string, p string) {
	for _, x := range *out {
		if x == p {
			return
		}
	}
	*out = append(*out, p)
}

// multikeyPaths returns, per key field of ix, the array prefixes doc
// has; nil when the index already records them all.
func (ix *indexState) multikeyPaths(doc bson.D) [][]string {
	if ix.def.IsID() || !ix.def.MultiKeyTracked {
		return nil
	}
	var paths [][]string
	for i, f := range ix.def.Fields {
		ps := arrayPrefixes(doc, f.Path)
		if len(ps) == 0 {
			continue
		}
		if paths == nil {
			paths = make([][]string, len(ix.def.Fields))
		}
		paths[i] = ps
	}
	if paths == nil || ix.def.HasMultiKeyPaths(paths) {
		return nil
	}
	return paths
}

// noteMultikey remembers the array paths doc adds to ix, for commit.
func (t *tx) noteMultikey(ix *indexState, doc bson.D) {
	paths := ix.multikeyPaths(doc)
	if paths == nil {
		return
	}
	if t.multikey == nil {
		t.multikey = map[uint32][][]string{}
	}
	t.multikey[ix.def.ID] = append(t.multikey[ix.def.ID], paths...)
}

// stageMultikey adds the catalog with the batch's new multikey paths to
// the batch. The caller commits the batch, then publishes the returned
// catalog (nil: nothing new) and calls release; writers that mark paths
// are serialised from staging to publishing, so none loses another's.
func (t *tx) stageMultikey() (*catalog.Collection, func(), error) {
	if t.multikey == nil {
		return nil, func() {}, nil
	}
	t.c.multikeyMu.Lock()
	release := t.c.multikeyMu.Unlock
	next := t.c.meta().Clone()
	changed := false
	for i := range next.Indexes {
		ix := &next.Indexes[i]
		if paths, ok := t.multikey[ix.ID]; ok {
			changed = addPathLists(ix, paths) || changed
		}
	}
	if !changed {
		release()
		return nil, func() {}, nil
	}
	if err := putMeta(t.b, next); err != nil {
		release()
		return nil, nil, err
	}
	return next, release, nil
}

// addPathLists adds lists of per-field paths (several documents' worth,
// each len(Fields) long) to ix.
func addPathLists(ix *catalog.Index, lists [][]string) bool {
	changed := false
	n := len(ix.Fields)
	for start := 0; start+n <= len(lists); start += n {
		changed = ix.AddMultiKeyPaths(lists[start:start+n]) || changed
	}
	return changed
}

// publishMeta swaps in a catalog that differs from the current one only
// in multikey paths, keeping each index's runtime state (TTL progress).
func (c *Collection) publishMeta(meta *catalog.Collection) {
	if meta == nil {
		return
	}
	old := c.state.Load()
	st := &collState{meta: meta, validator: old.validator} // the options are unchanged
	for i, ix := range old.indexes {
		cp := *ix
		cp.def = &meta.Indexes[i]
		st.indexes = append(st.indexes, &cp)
		if cp.def.HasLRU() && cp.def.Ready {
			st.lru = append(st.lru, &cp)
		}
		if ix.progress != nil {
			st.ttl = append(st.ttl, &cp)
			if cp.def.RefreshOnRead {
				st.refresh = append(st.refresh, &cp)
			}
			if cp.def.ExpireElements {
				st.elements = append(st.elements, &cp)
			}
		}
	}
	st.addClustered(old.clustered)
	c.state.Store(st)
}
