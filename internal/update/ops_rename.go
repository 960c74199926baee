package update

import (
	"strings"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// renameNode sits at the destination path; a placeholder holds the source
// path so that other operators on it conflict.
type renameNode struct {
	from     []string
	fromPath string
	toPath   string
}

func (u *Update) addRename(f bson.E) error {
	fromParts, err := checkUpdatePath(f.Key)
	if err != nil {
		return err
	}
	if err := u.insert(fromParts, f.Key, placeholder{}); err != nil {
		return err
	}
	to, ok := f.Value.(string)
	if !ok {
		return errf(mongoerr.BadValue, "The 'to' field for $rename must be a string: %s",
			formatElem(f.Key, f.Value))
	}
	toParts, err := checkUpdatePath(to)
	if err != nil {
		return err
	}
	if err := checkRename(f, fromParts, toParts); err != nil {
		return err
	}
	return u.insert(toParts, to, &renameNode{from: fromParts, fromPath: f.Key, toPath: to})
}

func checkRename(f bson.E, from, to []string) error {
	expr := formatElem(f.Key, f.Value)
	switch {
	case strings.ContainsRune(f.Value.(string), 0):
		return errf(mongoerr.BadValue, "The 'to' field for $rename cannot contain an embedded null byte")
	case f.Key == f.Value.(string):
		return errf(mongoerr.BadValue, "The source and target field for $rename must differ: %s", expr)
	case isPrefix(from, to) || isPrefix(to, from):
		return errf(mongoerr.BadValue,
			"The source and target field for $rename must not be on the same path: %s", expr)
	case isDynamic(from):
		return errf(mongoerr.BadValue, "The source field for $rename may not be dynamic: %s", f.Key)
	case isDynamic(to):
		return errf(mongoerr.BadValue, "The destination field for $rename may not be dynamic: %s",
			f.Value.(string))
	}
	return nil
}

// apply moves the source value to st: a $set of the destination followed
// by an $unset of the source, after MongoDB's checks that neither path runs
// through an array.
func (r *renameNode) apply(a *applier, st *state) error {
	src, found, err := r.source(a)
	if err != nil || !found {
		return err
	}
	if err := r.checkDestination(a, st); err != nil {
		return err
	}
	if err := setRenamed(a, st, src); err != nil {
		return err
	}
	return r.unsetSource(a)
}

// source finds the value to move, failing on a path that cannot exist and
// on one inside an array.
func (r *renameNode) source(a *applier) (any, bool, error) {
	var cur any = a.root
	arrayAt := -1
	for i, p := range r.from {
		if kindOf(cur) == kindArr {
			arrayAt = i - 1
		}
		next, ok, err := r.step(cur, i, p)
		if err != nil || !ok {
			return nil, false, err
		}
		cur = next
	}
	if arrayAt >= 0 {
		return nil, false, errf(mongoerr.BadValue, "The source field cannot be an array element, "+
			"'%s' in doc with %s has an array field called '%s'", r.fromPath, a.idOrNone(), r.from[arrayAt])
	}
	return cur, true, nil
}

// step descends one component, as pathsupport::findLongestPrefix does.
func (r *renameNode) step(cur any, i int, p string) (any, bool, error) {
	switch kindOf(cur) {
	case kindDoc:
		v, ok := bsonutil.Field(docOf(cur), p)
		return v, ok, nil
	case kindArr:
		if n, ok := arrayIndex(p); ok {
			arr := arrOf(cur)
			return safeIndex(arr, n)
		}
	}
	if i == 0 {
		return nil, false, nil
	}
	return nil, false, errf(pathNotViable, "cannot use the part (%s of %s) to traverse the element ({%s})",
		r.from[i-1], r.fromPath, formatElem(r.from[i-1], cur))
}

func safeIndex(a bson.A, n int) (any, bool, error) {
	if n < len(a) {
		return a[n], true, nil
	}
	return nil, false, nil
}

// checkDestination rejects a destination below an array element; the
// element being overwritten may itself be an array.
func (r *renameNode) checkDestination(a *applier, st *state) error {
	n := len(st.taken)
	if len(st.create) == 0 {
		n--
	}
	var cur any = a.root
	arrayAt := -1
	for i := 0; i < n; i++ {
		cur, _, _ = r.stepQuiet(cur, st.taken[i])
		if kindOf(cur) == kindArr {
			arrayAt = i
		}
	}
	if arrayAt < 0 {
		return nil
	}
	return errf(mongoerr.BadValue, "The destination field cannot be an array element, "+
		"'%s' in doc with %s has an array field called '%s'", r.toPath, a.idOrNone(), st.taken[arrayAt])
}

func (r *renameNode) stepQuiet(cur any, p string) (any, bool, error) {
	if kindOf(cur) == kindDoc {
		v, ok := bsonutil.Field(docOf(cur), p)
		return v, ok, nil
	}
	n, _ := arrayIndex(p)
	return safeIndex(arrOf(cur), n)
}

// setRenamed is MongoDB's SetElementNode: it always counts as a change.
func setRenamed(a *applier, st *state, v any) error {
	if len(st.create) > 0 {
		return commitCreated(a, st, v)
	}
	return commitExisting(a, st, v)
}

func (r *renameNode) unsetSource(a *applier) error {
	st := &state{elem: a.root}
	for _, p := range r.from {
		st = st.child(p)
	}
	return commitExisting(a, st, removal{})
}

func (a *applier) idOrNone() string {
	if s := a.idString(); s != "" {
		return s
	}
	return "no id"
}
