package catalog

// Multikey tracking: an index is multikey once some document held an
// array on one of its key paths. The planner may intersect bounds and
// combine fields only where no array can hide a second value, so it needs
// to know; explain reports it as isMultiKey and multiKeyPaths.

// IsMultiKey reports whether any key field of ix may hold an array.
func (ix *Index) IsMultiKey() bool {
	for i := range ix.Fields {
		if ix.FieldMultiKey(i) {
			return true
		}
	}
	return false
}

// FieldMultiKey reports whether key field i may hold an array. Indexes
// written before tracking began count as multikey everywhere (but _id,
// which never holds an array).
func (ix *Index) FieldMultiKey(i int) bool {
	if ix.IsID() {
		return false
	}
	if !ix.MultiKeyTracked {
		return true
	}
	return i < len(ix.MultiKeyPaths) && len(ix.MultiKeyPaths[i]) > 0
}

// FieldMultiKeyPaths returns the prefixes of key field i's path at which a
// document held an array, in path order ("a", "a.b"), as explain's
// multiKeyPaths lists them.
func (ix *Index) FieldMultiKeyPaths(i int) []string {
	if !ix.MultiKeyTracked {
		if ix.IsID() {
			return nil
		}
		return pathPrefixes(ix.Fields[i].Path)
	}
	if i < len(ix.MultiKeyPaths) {
		return ix.MultiKeyPaths[i]
	}
	return nil
}

// AddMultiKeyPaths records array prefixes seen for each key field and
// reports whether anything was new. paths is indexed like Fields. ix may
// be a shallow copy (Collection.Clone): the lists are copied before they
// change.
func (ix *Index) AddMultiKeyPaths(paths [][]string) bool {
	changed := false
	own := make([][]string, len(ix.Fields))
	for i := range own {
		if i < len(ix.MultiKeyPaths) {
			own[i] = append([]string(nil), ix.MultiKeyPaths[i]...)
		}
	}
	ix.MultiKeyPaths = own
	for i, ps := range paths {
		for _, p := range ps {
			if !containsString(ix.MultiKeyPaths[i], p) {
				ix.MultiKeyPaths[i] = insertByLength(ix.MultiKeyPaths[i], p)
				changed = true
			}
		}
	}
	return changed
}

// HasMultiKeyPaths reports whether every prefix in paths is recorded.
func (ix *Index) HasMultiKeyPaths(paths [][]string) bool {
	if !ix.MultiKeyTracked {
		return true
	}
	for i, ps := range paths {
		for _, p := range ps {
			if i >= len(ix.MultiKeyPaths) || !containsString(ix.MultiKeyPaths[i], p) {
				return false
			}
		}
	}
	return true
}

func pathPrefixes(path string) []string {
	var out []string
	for i := 0; i < len(path); i++ {
		if path[i] == '.' {
			out = append(out, path[:i])
		}
	}
	return append(out, path)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// insertByLength keeps prefixes of one path in path order: a shorter
// prefix comes first.
func insertByLength(list []string, s string) []string {
	i := 0
	for i < len(list) && len(list[i]) < len(s) {
		i++
	}
	list = append(list, "")
	copy(list[i+1:], list[i:])
	list[i] = s
	return list
}
