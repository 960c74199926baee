package oplog

import (
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
)

// Diff turns a change stream's updateDescription into the "$v": 2 diff
// of mongod's update entries: at each level of the document "u" sets
// fields, "d" removes them and "s<name>" descends into an embedded
// document; an array's level has "a": true, "l" for its new length,
// "u<index>" and "s<index>". Paths whose components the dotted string
// cannot tell (a field name that is a number or holds a dot) are read
// from disambiguatedPaths, which the description has for every such path.
func Diff(desc bson.D) (bson.D, error) {
	paths, err := disambiguated(desc)
	if err != nil {
		return nil, err
	}
	root := &level{}
	updated, _ := bsonutil.Lookup(desc, "updatedFields")
	set, _ := updated.(bson.D)
	for _, e := range set {
		parts := paths.of(e.Key)
		root.at(parts[:len(parts)-1]).set(parts[len(parts)-1], e.Value)
	}
	removed, _ := bsonutil.Lookup(desc, "removedFields")
	list, _ := removed.(bson.A)
	for _, v := range list {
		p, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("removed field is %T, not a string", v)
		}
		parts := paths.of(p)
		root.at(parts[:len(parts)-1]).remove(parts[len(parts)-1])
	}
	truncated, _ := bsonutil.Lookup(desc, "truncatedArrays")
	cuts, _ := truncated.(bson.A)
	for _, v := range cuts {
		if err := root.truncate(paths, v); err != nil {
			return nil, err
		}
	}
	return root.diff(), nil
}

// pathParts maps an ambiguous dotted path to its components: field names
// as strings, array indexes as numbers.
type pathParts map[string][]any

func disambiguated(desc bson.D) (pathParts, error) {
	v, _ := bsonutil.Lookup(desc, changestream.DisambiguatedPaths)
	d, _ := v.(bson.D)
	out := make(pathParts, len(d))
	for _, e := range d {
		parts, ok := e.Value.(bson.A)
		if !ok || len(parts) == 0 {
			return nil, fmt.Errorf("disambiguated path %q is %T", e.Key, e.Value)
		}
		out[e.Key] = parts
	}
	return out, nil
}

func (p pathParts) of(dotted string) []any {
	if parts, ok := p[dotted]; ok {
		return parts
	}
	names := strings.Split(dotted, ".")
	parts := make([]any, len(names))
	for i, n := range names {
		parts[i] = n
		// A field named by digits would have made the path ambiguous,
		// so digits here are an array index.
		if i > 0 && isIndex(n) {
			ix, _ := strconv.ParseInt(n, 10, 64)
			parts[i] = ix
		}
	}
	return parts
}

func isIndex(name string) bool {
	if name == "" || len(name) > 18 {
		return false
	}
	for _, c := range name {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// level is one embedded document or array of the diff, its entries in
// the order the description gave them.
type level struct {
	array    bool
	newLen   int64
	cut      bool
	updates  bson.D
	removals bson.D
	subs     []sub
}

type sub struct {
	name string
	next *level
}

// key is the name a component has at its level: a field name, or an
// array index prefixed as the diff's "u"/"s" entries spell it.
func key(part any) (string, bool) {
	switch x := part.(type) {
	case string:
		return x, false
	case int32:
		return strconv.Itoa(int(x)), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatInt(int64(x), 10), true
	}
	return fmt.Sprint(part), false
}

// at is the level the components lead to, made as needed: a component
// followed by an index is an array.
func (l *level) at(parts []any) *level {
	cur := l
	for i, part := range parts {
		name, _ := key(part)
		next := cur.child(name)
		if i+1 < len(parts) {
			_, next.array = key(parts[i+1])
		}
		cur = next
	}
	return cur
}

func (l *level) child(name string) *level {
	for _, s := range l.subs {
		if s.name == name {
			return s.next
		}
	}
	next := &level{}
	l.subs = append(l.subs, sub{name: name, next: next})
	return next
}

func (l *level) set(part any, v any) {
	name, index := key(part)
	l.array = l.array || index
	l.updates = append(l.updates, bson.E{Key: name, Value: v})
}

func (l *level) remove(part any) {
	name, index := key(part)
	if index { // an array element cannot be removed, only set to null
		l.array = true
		l.updates = append(l.updates, bson.E{Key: name, Value: nil})
		return
	}
	l.removals = append(l.removals, bson.E{Key: name, Value: false})
}

func (l *level) truncate(paths pathParts, v any) error {
	cut, ok := v.(bson.D)
	if !ok {
		return fmt.Errorf("truncated array is %T, not a document", v)
	}
	f, _ := bsonutil.Lookup(cut, "field")
	field, ok := f.(string)
	if !ok {
		return fmt.Errorf("truncated array field is %T, not a string", f)
	}
	arr := l.at(paths.of(field))
	arr.array, arr.cut = true, true
	size, _ := bsonutil.Lookup(cut, "newSize")
	switch n := size.(type) {
	case int32:
		arr.newLen = int64(n)
	case int64:
		arr.newLen = n
	default:
		return fmt.Errorf("truncated array size is %T", n)
	}
	return nil
}

func (l *level) diff() bson.D {
	if l.array {
		return l.arrayDiff()
	}
	var d bson.D
	if len(l.removals) > 0 {
		d = append(d, bson.E{Key: "d", Value: l.removals})
	}
	if len(l.updates) > 0 {
		d = append(d, bson.E{Key: "u", Value: l.updates})
	}
	for _, s := range l.subs {
		d = append(d, bson.E{Key: "s" + s.name, Value: s.next.diff()})
	}
	if d == nil {
		d = bson.D{}
	}
	return d
}

func (l *level) arrayDiff() bson.D {
	d := bson.D{{Key: "a", Value: true}}
	if l.cut {
		d = append(d, bson.E{Key: "l", Value: int32(l.newLen)})
	}
	for _, u := range l.updates {
		d = append(d, bson.E{Key: "u" + u.Key, Value: u.Value})
	}
	for _, s := range l.subs {
		d = append(d, bson.E{Key: "s" + s.name, Value: s.next.diff()})
	}
	return d
}
