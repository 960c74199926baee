package update

import (
	"strconv"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// applier carries what one Apply call shares across the tree walk.
type applier struct {
	u       *Update
	ctx     Context
	root    *mdoc // &rootDoc
	rootDoc mdoc  // the document's copy, made with the applier
	changed bool
	tsInc   uint32 // increments handed out for Timestamp values in this call
	// placed is a lower bound on the BSON size of what this update has put
	// in the document (see place).
	placed int
	// states holds the states of the walk's first levels (enter), and
	// path the fields they have taken: a walk is a stack, and these save
	// it an allocation per level.
	states [3]state
	depth  int
	path   [4]string
}

// Apply returns the updated document (doc itself is not modified) and
// whether anything changed, which is what counts toward nModified.
func (u *Update) Apply(doc bson.D, ctx Context) (bson.D, bool, error) {
	if u.replacement != nil {
		return u.applyReplacement(doc, ctx)
	}
	if u.spareTaken.Swap(true) {
		return u.applyOperators(new(applier), doc, ctx)
	}
	out, changed, err := u.applyOperators(&u.spare, doc, ctx)
	u.spare = applier{} // the Update may live on: it keeps nothing of doc
	return out, changed, err
}

// applyOperators is Apply of an operator update with a, a zero applier
// no one else uses.
func (u *Update) applyOperators(a *applier, doc bson.D, ctx Context) (bson.D, bool, error) {
	*a = applier{u: u, ctx: ctx, rootDoc: mdoc{d: append(bson.D(nil), doc...)}}
	a.root = &a.rootDoc
	if err := u.root.apply(a, &state{elem: a.root, taken: a.path[:0]}); err != nil {
		return nil, false, err
	}
	if !a.changed {
		return doc, false, nil
	}
	out := finishDoc(a.root)
	if ctx.IsInsert {
		out = idFirst(out)
		if err := checkID(out); err != nil {
			return nil, false, err
		}
	}
	return out, true, nil
}

func (n *objNode) apply(a *applier, st *state) error {
	if n.positional == nil {
		return n.applyChildren(a, st, "")
	}
	if a.ctx.Positional < 0 {
		return errPositionalNoMatch()
	}
	return n.applyChildren(a, st, strconv.Itoa(a.ctx.Positional))
}

// applyChildren applies the children in order, slotting the positional
// child in where its matched name falls (by plain string order, as MongoDB
// does) or merging it with a child of the same name.
func (n *objNode) applyChildren(a *applier, st *state, pos string) error {
	pending := n.positional != nil
	for _, c := range n.children {
		child := c.node
		if pending && c.name == pos {
			merged, err := mergeNodes(n.positional, c.node, append(joinParts(st), pos))
			if err != nil {
				return err
			}
			child, pending = merged, false
		} else if pending && pos < c.name {
			if err := applyChild(a, st, n.positional, pos); err != nil {
				return err
			}
			pending = false
		}
		if err := applyChild(a, st, child, c.name); err != nil {
			return err
		}
	}
	if pending {
		return applyChild(a, st, n.positional, pos)
	}
	return nil
}

func applyChild(a *applier, st *state, child node, field string) error {
	err := child.apply(a, a.enter(st, field))
	a.depth--
	if err != nil {
		return err
	}
	st.resync()
	return nil
}

// enter is st.child(field) for the walk, which leaves it (depth--) once
// the child has been applied. The child's state is the applier's for
// the first levels. Its taken extends st's in place rather than in a
// copy: only the deepest state of the walk is live, and what keeps a
// path past its state (errors, mergeNodes) copies it.
func (a *applier) enter(st *state, field string) *state {
	var c *state
	if a.depth < len(a.states) {
		c = &a.states[a.depth]
	} else {
		c = new(state)
	}
	a.depth++
	*c = *st
	c.create = clip(st.create)
	if len(c.create) == 0 && c.advance(field) {
		return c
	}
	c.create = append(c.create, field)
	return c
}

func joinParts(st *state) []string {
	return append(clip(st.taken), st.create...)
}

func (n *arrNode) apply(a *applier, st *state) error {
	if len(st.create) > 0 {
		return errf(mongoerr.BadValue,
			"The path '%s' must exist in the document in order to apply array updates.",
			joinPath(st.taken, st.create))
	}
	arr, ok := st.elem.(*marr)
	if !ok {
		return errf(mongoerr.BadValue, "Cannot apply array updates to non-array element %s",
			formatElem(st.name(), st.elem))
	}
	matches := n.match(a, arr)
	for i, sel := range matches {
		if err := applyMatched(a, st, sel, i); err != nil {
			return err
		}
	}
	return nil
}

// match decides, before anything changes, which children apply to each
// element of the array.
func (n *arrNode) match(a *applier, arr *marr) [][]node {
	out := make([][]node, len(arr.a))
	for i, e := range arr.a {
		for _, c := range n.children {
			if c.name == "" || a.u.filters[c.name].matches(c.name, e) {
				out[i] = append(out[i], c.node)
			}
		}
	}
	return out
}

func applyMatched(a *applier, st *state, sel []node, i int) error {
	if len(sel) == 0 {
		return nil
	}
	field := strconv.Itoa(i)
	merged := sel[0]
	for _, next := range sel[1:] {
		m, err := mergeNodes(merged, next, append(clip(st.taken), field))
		if err != nil {
			return err
		}
		merged = m
	}
	return applyChild(a, st, merged, field)
}

// idFirst moves _id to the front, where MongoDB keeps it in stored
// documents.
func idFirst(d bson.D) bson.D {
	for i, e := range d {
		if e.Key == "_id" {
			if i > 0 {
				copy(d[1:i+1], d[:i])
				d[0] = e
			}
			return d
		}
	}
	return d
}

// place counts n more bytes put in the document and fails once they pass
// the largest document. Every operator writes its own path (two writes to
// one path conflict at parse), so what they put adds up in the result, and
// past the limit the result can only be refused: MongoDB builds it and
// refuses it with this error. Stopping here instead bounds what an update
// costs by one document, whatever the fan-out of $[] or the padding asked
// for; the one difference is that an error a later operator would raise is
// not reached.
func (a *applier) place(n int) error {
	a.placed += n
	if a.placed > maxDocumentBytes {
		return errTooLarge()
	}
	return nil
}

// nullElementsBytes is the BSON size of null array elements at indexes
// [from, to): a type byte, the decimal index and its terminating zero.
func nullElementsBytes(from, to int) int {
	n := 0
	for digits, next := 1, 10; from < to; digits, next = digits+1, next*10 {
		if end := min(to, next); from < end {
			n += (end - from) * (digits + 2)
			from = end
		}
	}
	return n
}
