package update

import (
	"strings"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// leafParser makes l, a zero leaf, the leaf for one field of one
// operator. (The caller allocates the leaf: Update.newLeaf.)
type leafParser func(l *leafNode, field string, v any) error

// operator returns the parser for an update operator, or nil if unknown;
// comparing operators compare under coll (nil: binary).
func operator(name string, coll query.Collator) leafParser {
	switch name {
	case "$set":
		return parseSet
	case "$setOnInsert":
		return parseSetOnInsert
	case "$unset":
		return func(l *leafNode, _ string, _ any) error {
			l.mod, l.allowNonViable = unsetMod{}, true
			return nil
		}
	case "$min", "$max":
		isMax, cmp := name == "$max", comparator(coll)
		return simple(func(v any) modifier { return compareMod{max: isMax, val: v, cmp: cmp} })
	}
	return arrayOperator(name, coll)
}

func arrayOperator(name string, coll query.Collator) leafParser {
	cmp := comparator(coll)
	switch name {
	case "$inc":
		return withField(func(f string, v any) (modifier, error) { return parseArith(opAdd, f, v) })
	case "$mul":
		return withField(func(f string, v any) (modifier, error) { return parseArith(opMul, f, v) })
	case "$pop":
		return withField(parsePop)
	case "$bit":
		return checked(parseBit)
	case "$currentDate":
		return checked(parseCurrentDate)
	case "$push":
		return checked(func(v any) (modifier, error) { return parsePush(v, cmp) })
	case "$addToSet":
		return checked(func(v any) (modifier, error) { return parseAddToSet(v, cmp) })
	case "$pull":
		return checked(func(v any) (modifier, error) { return parsePull(v, coll) })
	case "$pullAll":
		return checked(func(v any) (modifier, error) { return parsePullAll(v, cmp) })
	}
	return nil
}

// parseSet is $set's leafParser: a plain func, where simple would make
// a closure for every $set parsed.
func parseSet(l *leafNode, _ string, v any) error {
	l.setTo(v)
	return nil
}

func parseSetOnInsert(l *leafNode, _ string, v any) error {
	l.setTo(v)
	l.insertOnly = true
	return nil
}

// setTo makes l set v. Its modifier is the leaf's own set field: a
// setMod boxed in the interface would be an allocation of its own.
func (l *leafNode) setTo(v any) {
	l.set = setMod{val: v}
	l.mod = &l.set
}

func simple(f func(any) modifier) leafParser {
	return func(l *leafNode, _ string, v any) error {
		l.mod = f(v)
		return nil
	}
}

func checked(f func(any) (modifier, error)) leafParser {
	return withField(func(_ string, v any) (modifier, error) { return f(v) })
}

func withField(f func(string, any) (modifier, error)) leafParser {
	return func(l *leafNode, field string, v any) error {
		m, err := f(field, v)
		l.mod = m
		return err
	}
}

func (u *Update) parseOperators() error {
	if _, ok := bsonutil.Field(u.source, "$v"); ok {
		return errf(mongoerr.FailedToParse, "The $v update field is only recognized internally")
	}
	for _, op := range u.source {
		if err := u.parseOperator(op); err != nil {
			return err
		}
	}
	return nil
}

// parseOperator parses one {$op: {path: arg, ...}}. An empty argument
// document is accepted as a no-op, as MongoDB does since 5.0.
func (u *Update) parseOperator(op bson.E) error {
	if op.Key == "$rename" {
		return u.parseFields(op, u.addRename)
	}
	parse := operator(op.Key, u.coll)
	if parse == nil {
		return errf(mongoerr.FailedToParse, "Unknown modifier: %s. Expected a valid update modifier "+
			"or pipeline-style update specified as an array", op.Key)
	}
	return u.parseFields(op, func(f bson.E) error { return u.addLeaf(f.Key, f.Value, parse) })
}

func (u *Update) parseFields(op bson.E, add func(bson.E) error) error {
	if kindOf(op.Value) != kindDoc {
		return errf(mongoerr.FailedToParse, "Modifiers operate on fields but we found type %s "+
			"instead. For example: {$mod: {<field>: ...}} not {%s}", typeName(op.Value),
			formatElem(op.Key, op.Value))
	}
	for _, f := range docOf(op.Value) {
		if err := add(f); err != nil {
			return err
		}
	}
	return nil
}

// addLeaf is MongoDB's UpdateObjectNode::parseAndMerge for one path.
// The tree keeps the components (strings), not their slice, which can
// therefore be an array here.
func (u *Update) addLeaf(path string, v any, parse leafParser) error {
	var buf [8]string
	parts, err := appendPath(buf[:0], path)
	if err == nil {
		err = checkPositional(parts, path)
	}
	if err != nil {
		return err
	}
	leaf := u.newLeaf()
	if err := parse(leaf, path, v); err != nil {
		return err
	}
	return u.insert(parts, path, leaf)
}

// newLeaf is a zero leaf for the tree: the Update's own first one (most
// updates have one), then one of its own each.
func (u *Update) newLeaf() *leafNode {
	if !u.leaf1Used {
		u.leaf1Used = true
		return &u.leaf1
	}
	return new(leafNode)
}

func checkUpdatePath(path string) ([]string, error) {
	parts, err := splitPath(path)
	if err != nil {
		return nil, err
	}
	return parts, checkPositional(parts, path)
}

// insert places a leaf in the tree, creating internal vertices on the way
// and rejecting paths that overlap one already there.
func (u *Update) insert(parts []string, path string, leaf node) error {
	var cur node = u.root
	for i := range parts[:len(parts)-1] {
		next, err := u.internal(cur, parts, i, path)
		if err != nil {
			return err
		}
		cur = next
	}
	last := len(parts) - 1
	name, err := u.childName(parts, last, path)
	if err != nil {
		return err
	}
	if getChild(cur, name) != nil {
		return errConflict(path, path)
	}
	setChild(cur, name, leaf)
	return nil
}

// internal returns (creating if needed) the vertex for parts[i] below cur:
// an arrNode if the next component is $[...], else an objNode.
func (u *Update) internal(cur node, parts []string, i int, path string) (node, error) {
	name, err := u.childName(parts, i, path)
	if err != nil {
		return nil, err
	}
	wantArr := isArrayFilter(parts[i+1])
	child := getChild(cur, name)
	if child == nil {
		child = newInternal(wantArr)
		setChild(cur, name, child)
		return child, nil
	}
	if _, isArr := child.(*arrNode); isArr != wantArr || !isInternal(child) {
		return nil, errConflict(path, strings.Join(parts[:i+1], "."))
	}
	return child, nil
}

func newInternal(arr bool) node {
	if arr {
		return &arrNode{}
	}
	return &objNode{}
}

func isInternal(n node) bool {
	switch n.(type) {
	case *objNode, *arrNode:
		return true
	}
	return false
}

// childName is the key of parts[i] in its parent: the identifier for
// $[<id>] (which must have a filter), else the component itself.
func (u *Update) childName(parts []string, i int, path string) (string, error) {
	p := parts[i]
	if !isArrayFilter(p) {
		u.positional = u.positional || isPositional(p)
		return p, nil
	}
	if i == 0 {
		return "", errf(mongoerr.BadValue, "Cannot have array filter identifier (i.e. '$[<id>]') "+
			"element in the first position in path '%s'", path)
	}
	id := p[2 : len(p)-1]
	if id != "" {
		if _, ok := u.filters[id]; !ok {
			return "", errf(mongoerr.BadValue, "No array filter found for identifier '%s' in path '%s'", id, path)
		}
		u.filters[id].used = true
	}
	return id, nil
}

func getChild(n node, name string) node {
	switch x := n.(type) {
	case *objNode:
		return x.child(name)
	case *arrNode:
		return x.child(name)
	}
	return nil
}

func setChild(n node, name string, c node) {
	switch x := n.(type) {
	case *objNode:
		x.setChild(name, c)
	case *arrNode:
		x.setChild(name, c)
	}
}

func errConflict(path, at string) error {
	return errf(mongoerr.ConflictingUpdateOperators,
		"Updating the path '%s' would create a conflict at '%s'", path, at)
}
