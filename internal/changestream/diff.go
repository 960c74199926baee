package changestream

import (
	"reflect"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// UpdateDescription is what an update changed, as change streams report
// it: fields set (dotted paths into embedded documents and array
// elements), fields removed, and arrays cut shorter. When a path is
// ambiguous (one of its field names is a number or has a dot in it) a
// fourth field, disambiguatedPaths, gives its components, array indexes
// as numbers: streams with showExpandedEvents report it, {} when there
// is none (DisambiguatedPaths).
func UpdateDescription(old, next bson.D) bson.D {
	var d differ
	d.docs(path{}, old, next)
	if d.updated == nil {
		d.updated = bson.D{}
	}
	if d.removed == nil {
		d.removed = bson.A{}
	}
	if d.truncated == nil {
		d.truncated = bson.A{}
	}
	desc := bson.D{
		{Key: "updatedFields", Value: d.updated},
		{Key: "removedFields", Value: d.removed},
		{Key: "truncatedArrays", Value: d.truncated},
	}
	if d.ambiguous != nil {
		desc = append(desc, bson.E{Key: DisambiguatedPaths, Value: d.ambiguous})
	}
	return desc
}

// DisambiguatedPaths is the updateDescription field only streams with
// showExpandedEvents see.
const DisambiguatedPaths = "disambiguatedPaths"

type differ struct {
	updated   bson.D
	removed   bson.A
	truncated bson.A
	ambiguous bson.D // disambiguatedPaths, nil while there is none
	// parts holds the components of the path being visited (field names,
	// array indexes as int32), depth-first: a path of depth n owns
	// parts[:n], so nothing is copied unless a path is ambiguous.
	parts []any
}

// path is where the differ is: the dotted string, how many components it
// has, and whether a field name makes the dotted string ambiguous.
type path struct {
	dotted    string
	depth     int
	ambiguous bool
}

func (d *differ) field(at path, name string) path {
	d.parts = append(d.parts[:at.depth], name)
	return path{dotted: at.join(name), depth: at.depth + 1, ambiguous: at.ambiguous || ambiguousName(name)}
}

func (d *differ) index(at path, i int) path {
	d.parts = append(d.parts[:at.depth], int32(i))
	return path{dotted: at.join(strconv.Itoa(i)), depth: at.depth + 1, ambiguous: at.ambiguous}
}

func (p path) join(s string) string {
	if p.dotted == "" {
		return s
	}
	return p.dotted + "." + s
}

// ambiguousName reports whether a field name reads, in a dotted path, as
// something else: an array index, or more than one field.
func ambiguousName(name string) bool {
	if strings.Contains(name, ".") {
		return true
	}
	if name == "" {
		return false
	}
	for _, c := range name {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// note records p's components when its dotted form is ambiguous.
func (d *differ) note(p path) {
	if p.ambiguous {
		d.ambiguous = append(d.ambiguous, bson.E{Key: p.dotted, Value: append(bson.A(nil), d.parts[:p.depth]...)})
	}
}

func (d *differ) docs(at path, old, next bson.D) {
	for _, e := range next {
		p := d.field(at, e.Key)
		ov, ok := field(old, e.Key)
		if !ok {
			d.set(p, e.Value)
			continue
		}
		d.value(p, ov, e.Value)
	}
	for _, e := range old {
		if _, ok := field(next, e.Key); !ok {
			p := d.field(at, e.Key)
			d.removed = append(d.removed, p.dotted)
			d.note(p)
		}
	}
}

// value records how the value at p went from old to next: embedded
// documents and arrays are compared inside, anything else is set whole
// when it differs (in value or in type: 1 and 1.0 are different here).
func (d *differ) value(p path, old, next any) {
	switch n := next.(type) {
	case bson.D:
		if o, ok := old.(bson.D); ok {
			d.docs(p, o, n)
			return
		}
	case bson.A:
		if o, ok := old.(bson.A); ok {
			d.arrays(p, o, n)
			return
		}
	}
	if !same(old, next) {
		d.set(p, next)
	}
}

func (d *differ) arrays(at path, old, next bson.A) {
	if len(next) < len(old) {
		d.truncated = append(d.truncated, bson.D{{Key: "field", Value: at.dotted}, {Key: "newSize", Value: int32(len(next))}})
		d.note(at)
	}
	for i, v := range next {
		p := d.index(at, i)
		if i < len(old) {
			d.value(p, old[i], v)
		} else {
			d.set(p, v)
		}
	}
}

func (d *differ) set(p path, v any) {
	d.updated = append(d.updated, bson.E{Key: p.dotted, Value: v})
	d.note(p)
}

func same(a, b any) bool {
	return reflect.TypeOf(a) == reflect.TypeOf(b) && bsonutil.Compare(a, b) == 0
}

func field(doc bson.D, key string) (any, bool) {
	for _, e := range doc {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}
