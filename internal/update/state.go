package update

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// state is where the update walk stands, in MongoDB's terms: elem is the
// deepest element of the path that exists (reached through taken), and
// create lists the components below it that do not exist yet.
type state struct {
	parent any    // owned container holding elem; nil for the root
	key    string // elem's field name or array index in parent
	idx    int    // elem's position in parent, a hint re-checked on use
	elem   any    // owned if it is a container
	taken  []string
	create []string
}

// name is the field name MongoDB prints for elem in messages.
func (st *state) name() string { return st.key }

// child returns the state for field below st, owning the child container.
func (st *state) child(field string) *state {
	c := *st
	c.taken, c.create = clip(st.taken), clip(st.create)
	if len(c.create) == 0 && c.advance(field) {
		return &c
	}
	c.create = append(c.create, field)
	return &c
}

// advance moves st to an existing child of elem, owning it.
func (st *state) advance(field string) bool {
	i, ok := childIndex(st.elem, field)
	if !ok {
		return false
	}
	v := own(st.elem.(interface{ at(int) any }).at(i))
	setAt(st.elem, i, v)
	st.parent, st.key, st.idx, st.elem = st.elem, field, i, v
	st.taken = append(st.taken, field)
	return true
}

// resync follows a path that a child just created, as MongoDB's applyChild
// does, so later siblings see it as existing.
func (st *state) resync() {
	if len(st.create) == 0 {
		return
	}
	if _, ok := childIndex(st.elem, st.create[0]); !ok {
		return
	}
	parts := st.create
	st.create = nil
	for _, p := range parts {
		st.advance(p)
	}
}

// childIndex finds field in an owned container: by name in a document, by
// index in an array.
func childIndex(elem any, field string) (int, bool) {
	switch c := elem.(type) {
	case *mdoc:
		i := c.index(field)
		return i, i >= 0
	case *marr:
		i, ok := arrayIndex(field)
		return i, ok && i < len(c.a)
	}
	return 0, false
}

func (m *mdoc) at(i int) any { return m.d[i].Value }
func (m *marr) at(i int) any { return m.a[i] }

func setAt(container any, i int, v any) {
	switch c := container.(type) {
	case *mdoc:
		c.d[i].Value = v
	case *marr:
		c.a[i] = v
	}
}

// slot re-finds elem's position in its parent; sibling removals by $rename
// may have moved it.
func (st *state) slot() int {
	if d, ok := st.parent.(*mdoc); ok {
		if st.idx >= len(d.d) || d.d[st.idx].Key != st.key {
			st.idx = d.index(st.key)
		}
	}
	return st.idx
}

func (st *state) set(v any) {
	setAt(st.parent, st.slot(), v)
	st.elem = v
}

// remove deletes elem; inside an array it becomes null instead, so that
// the positions of the other elements do not move.
func (st *state) remove() {
	switch p := st.parent.(type) {
	case *mdoc:
		i := st.slot()
		p.d = append(p.d[:i], p.d[i+1:]...)
	case *marr:
		p.a[st.idx] = nil
	}
}

// attach creates st.create below elem with v at its end (MongoDB's
// pathsupport::createPathAt).
func (st *state) attach(v any) error {
	for i := len(st.create) - 1; i > 0; i-- {
		v = &mdoc{d: bson.D{{Key: st.create[i], Value: v}}}
	}
	switch c := st.elem.(type) {
	case *mdoc:
		c.d = append(c.d, bson.E{Key: st.create[0], Value: v})
		return nil
	case *marr:
		return st.attachToArray(c, v)
	}
	return st.cannotCreate()
}

func (st *state) attachToArray(c *marr, v any) error {
	from, to, err := st.padding()
	if err != nil {
		return err
	}
	c.a = slices.Grow(c.a, to+1-from)
	for range to - from {
		c.a = append(c.a, nil)
	}
	c.a = append(c.a, v)
	return nil
}

// padding returns the indexes [from, to) of the nulls that creating
// st.create[0] in an array adds before it: none unless the index is past
// the array's end, and at most maxPadding, as MongoDB allows.
func (st *state) padding() (from, to int, err error) {
	c, ok := st.elem.(*marr)
	if !ok {
		return 0, 0, nil
	}
	i, ok := arrayIndex(st.create[0])
	if !ok {
		return 0, 0, st.cannotCreate()
	}
	if i-len(c.a) > maxPadding {
		return 0, 0, errf(codeCannotBackfillArray, "can't backfill more than %d elements", maxPadding)
	}
	return len(c.a), max(i, len(c.a)), nil
}

func (st *state) cannotCreate() error {
	return errf(pathNotViable, "Cannot create field '%s' in element {%s}",
		st.create[0], formatElem(st.name(), st.elem))
}
