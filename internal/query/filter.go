package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Filter is a parsed query filter. It is immutable after NewFilter and safe
// for concurrent use.
type Filter struct {
	root node
	spec bson.D
	// vars are the command's let variables (and $$NOW) that $expr reads;
	// nil when the filter was parsed without them.
	vars map[string]any
	// coll keys strings under a non-simple collation: root was parsed
	// from the keyed filter, documents are keyed before matching. plain
	// is the filter parsed as written, for the values an upsert stores.
	coll  Collator
	plain *Filter
	// usesExpr is whether the filter has a $expr anywhere (Guarded), kept
	// so that a filter without its spec (Lean) still knows.
	usesExpr bool
	// inlineRoot says that root was allocated with the Filter
	// (newEqualityFilter), and so keeps it and its spec alive.
	inlineRoot bool
}

// NewFilter parses and validates a query filter. Errors are
// *mongoerr.Error values carrying MongoDB's code and message.
func NewFilter(filter bson.D) (*Filter, error) {
	if len(filter) == 1 && !strings.HasPrefix(filter[0].Key, "$") && isEquality(filter[0].Value) {
		return newEqualityFilter(filter)
	}
	root, err := parseFilterDoc(filter, levelTop)
	if err != nil {
		return nil, err
	}
	return &Filter{root: root, spec: filter, usesExpr: hasExpr(filter)}, nil
}

// equalityFilter is a Filter of one equality and its one node, in one
// allocation: the usual filter ({_id: v}, {token: v}).
type equalityFilter struct {
	f    Filter
	node fieldNode
}

// newEqualityFilter is NewFilter of {name: v}, a plain equality, as
// parseFilterDoc would parse it.
func newEqualityFilter(filter bson.D) (*Filter, error) {
	b := new(equalityFilter)
	if err := b.node.initEquality(filter[0].Key, filter[0].Value); err != nil {
		return nil, err
	}
	b.f = Filter{root: &b.node, spec: filter, usesExpr: hasExpr(filter), inlineRoot: true}
	return &b.f, nil
}

// Match reports whether doc matches the filter. A $expr that fails to
// evaluate counts as no match; use MatchErr to see the error.
func (f *Filter) Match(doc bson.D) bool {
	if f.vars != nil {
		return f.root.matches(f.keyed(doc), &matchCtx{pos: -1, vars: f.vars, orig: doc})
	}
	return f.root.matches(f.keyed(doc), nil)
}

// MatchErr is Match that also returns the first error raised while
// evaluating a $expr, which MongoDB reports as a failure of the whole
// query.
func (f *Filter) MatchErr(doc bson.D) (bool, error) {
	if !f.usesExpr { // only a $expr fails or reads the context: spare it
		return f.root.matches(f.keyed(doc), nil), nil
	}
	c := matchCtx{pos: -1, vars: f.vars, orig: doc}
	ok := f.root.matches(f.keyed(doc), &c)
	if c.err != nil {
		return false, c.err
	}
	return ok, nil
}

// MatchPositional matches doc and also returns the index of the array
// element that satisfied the first predicate that matched by traversing an
// array, as MongoDB's positional `$` projection and update operator use it;
// -1 when no predicate did (or doc does not match). Predicates under $or,
// $nor and $not never record an index, as in MongoDB. When several AND-ed
// predicates traverse arrays, MongoDB leaves the choice unspecified;
// Mayfly takes the first in filter order.
func (f *Filter) MatchPositional(doc bson.D) (ok bool, arrayIndex int) {
	c := matchCtx{pos: -1, vars: f.vars, orig: doc}
	if !f.root.matches(f.keyed(doc), &c) {
		return false, -1
	}
	return true, c.pos
}

// keyed is doc as the filter compares it: its strings keyed under the
// filter's collation, if any.
func (f *Filter) keyed(doc bson.D) bson.D {
	if f.coll == nil || doc == nil {
		return doc
	}
	return f.coll.Doc(doc)
}

// Collated reports whether the filter compares strings under a
// non-simple collation; its predicates then leave out string operands,
// which an index without that collation cannot bound.
func (f *Filter) Collated() bool { return f.coll != nil }

// Spec returns the filter document the Filter was parsed from (nil once
// Lean).
func (f *Filter) Spec() bson.D { return f.spec }

// Lean returns the filter without what only explain and upserts read (the
// document it was parsed from, and under a collation the filter as
// written), for a filter that only matches from now on, such as an open
// cursor's: the spec is the command's own document, and holding it would
// keep the request (an $in of a million values twice over) for the
// cursor's life.
func (f *Filter) Lean() *Filter {
	if f == nil {
		return nil
	}
	out := *f
	out.spec, out.plain = nil, nil
	if n, ok := f.root.(*fieldNode); ok && f.inlineRoot {
		// A root allocated with f would keep f, and its spec, alive: the
		// lean filter gets a node of its own, parsed as f's was.
		if own, err := newEqualityNode(n.name, n.cmp.rhs[0]); err == nil {
			out.root, out.inlineRoot = own, false
		}
	}
	return &out
}

// matchCtx collects what a match records besides its result. A nil
// *matchCtx records nothing, which keeps plain Match allocation-free.
type matchCtx struct {
	pos   int   // first array offset recorded, -1 for none
	muted int   // > 0 inside $or, $nor, $not and $elemMatch bodies
	err   error // first $expr evaluation error
	vars  map[string]any
	// orig is the document as given: under a collation the filter
	// matches its keyed copy, while $expr reads the original (its
	// comparisons apply the collation themselves).
	orig bson.D
}

// record notes the array offset of a match unless one is already known or
// recording is muted.
func (c *matchCtx) record(i int) {
	if c != nil && c.muted == 0 && c.pos < 0 && i >= 0 {
		c.pos = i
	}
}

func (c *matchCtx) mute() {
	if c != nil {
		c.muted++
	}
}

func (c *matchCtx) unmute() {
	if c != nil {
		c.muted--
	}
}

func (c *matchCtx) fail(err error) {
	if c != nil && c.err == nil {
		c.err = err
	}
}

// node is a document-level predicate: MongoDB's MatchExpression::matches.
type node interface {
	matches(doc bson.D, c *matchCtx) bool
}

type andNode []node

func (n andNode) matches(doc bson.D, c *matchCtx) bool {
	for _, child := range n {
		if !child.matches(doc, c) {
			return false
		}
	}
	return true
}

type orNode []node

func (n orNode) matches(doc bson.D, c *matchCtx) bool {
	c.mute()
	defer c.unmute()
	for _, child := range n {
		if child.matches(doc, c) {
			return true
		}
	}
	return false
}

type norNode []node

func (n norNode) matches(doc bson.D, c *matchCtx) bool {
	return !orNode(n).matches(doc, c)
}

type constNode bool

func (n constNode) matches(bson.D, *matchCtx) bool { return bool(n) }

// fieldNode applies an operator to the values at a path.
type fieldNode struct {
	name string // the dotted path as written
	path []string
	op   fieldOp
	one  [1]string // path's array when it has one component
	cmp  cmpOp     // op's comparison for a plain equality (newEqualityNode)
	// pred is the predicate of op when it is a comparison (Path empty
	// when not): a filter of this one field returns it as its only one.
	pred [1]Predicate
}

func (n *fieldNode) matches(doc bson.D, c *matchCtx) bool {
	return n.op.atPath(doc, n.path, c)
}
