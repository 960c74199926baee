package update

import (
	"strings"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// modifier is one operator's behaviour at one path.
type modifier interface {
	// modify computes the new value of an existing element; changed false
	// means a no-op. A *removal result deletes the element.
	modify(a *applier, st *state) (v any, changed bool, err error)
	// create computes the value of a missing element; ok false means the
	// operator never creates (such as $pop), so a missing path is a no-op.
	create(a *applier) (v any, ok bool, err error)
}

// removal is the value that asks for an element to be deleted.
type removal struct{}

// leafNode applies a modifier the way MongoDB's ModifierNode does.
type leafNode struct {
	mod            modifier
	set            setMod // mod of a $set or $setOnInsert leaf (newSetLeaf)
	insertOnly     bool   // $setOnInsert
	allowNonViable bool   // $unset: a missing path is never an error
}

func (l *leafNode) apply(a *applier, st *state) error {
	if l.insertOnly && !a.ctx.IsInsert {
		return nil
	}
	if len(st.create) > 0 {
		return l.applyMissing(a, st)
	}
	return l.applyExisting(a, st)
}

func (l *leafNode) applyExisting(a *applier, st *state) error {
	v, changed, err := l.mod.modify(a, st)
	if err != nil || !changed {
		return err
	}
	return commitExisting(a, st, v)
}

// commitExisting stores an existing element's new value after MongoDB's
// immutability and storage checks.
func commitExisting(a *applier, st *state, v any) error {
	if st.taken[0] == "_id" {
		return errImmutable(joinPath(st.taken))
	}
	a.changed = true
	if _, ok := v.(removal); ok {
		st.remove()
		return nil
	}
	if err := checkDepth(v, len(st.taken)); err != nil {
		return err
	}
	if err := a.place(bsonBytes(v)); err != nil {
		return err
	}
	st.set(v)
	return nil
}

func (l *leafNode) applyMissing(a *applier, st *state) error {
	v, ok, err := l.mod.create(a)
	switch {
	case err != nil:
		return err
	case ok:
		return commitCreated(a, st, v)
	case !l.allowNonViable:
		return checkViability(st)
	}
	return nil
}

// commitCreated creates the missing part of the path holding v.
func commitCreated(a *applier, st *state, v any) error {
	from, to, err := st.padding()
	if err != nil {
		return err
	}
	if err := a.place(nullElementsBytes(from, to) + bsonBytes(v)); err != nil {
		return err
	}
	if err := st.attach(v); err != nil {
		return err
	}
	if err := checkCreated(st, v); err != nil {
		return err
	}
	if len(st.taken) > 0 && st.taken[0] == "_id" {
		return errf(mongoerr.ImmutableField,
			"Updating the path '%s' to %s would modify the immutable field '_id'",
			joinPath(st.taken), formatElem(st.name(), st.elem))
	}
	a.changed = true
	return nil
}

// checkViability fails when the missing path could not even be created, for
// operators that do not create (MongoDB's UpdateLeafNode::checkViability).
func checkViability(st *state) error {
	switch kindOf(st.elem) {
	case kindDoc:
		return nil
	case kindArr:
		if _, ok := arrayIndex(st.create[0]); ok {
			return nil
		}
	}
	return errf(pathNotViable, "Cannot use the part (%s) of (%s.%s) to traverse the element ({%s})",
		st.create[0], joinPath(st.taken), joinPath(st.create), formatElem(st.name(), st.elem))
}

// checkCreated is MongoDB's storage validation of a new element: top-level
// field names may not start with '$', and nesting is limited.
func checkCreated(st *state, v any) error {
	if len(st.taken) == 0 && strings.HasPrefix(st.create[0], "$") {
		return errDollarField(st.create[0], st.create[0])
	}
	return checkDepth(v, len(st.taken)+len(st.create))
}

func errDollarField(name, full string) error {
	return errf(mongoerr.DollarPrefixedFieldName,
		"The dollar ($) prefixed field '%s' in '%s' is not allowed in the context of an "+
			"update's replacement document. Consider using an aggregation pipeline with $replaceWith.",
		name, full)
}

// checkDepth fails if v, stored at nesting level (top-level fields are at
// 1), would nest deeper than MongoDB stores.
func checkDepth(v any, level int) error {
	if level+depth(v) > maxStorageDepth {
		return errf(mongoerr.Overflow, "Document exceeds maximum nesting depth of %d", maxStorageDepth)
	}
	return nil
}

func depth(v any) int {
	most := -1
	switch kindOf(v) {
	case kindDoc:
		for _, e := range docOf(v) {
			most = max(most, depth(e.Value))
		}
	case kindArr:
		for _, e := range arrOf(v) {
			most = max(most, depth(e))
		}
	}
	return most + 1
}
