package changestream

import (
	"reflect"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// UpdateDescription is what an update changed, as change streams report
// it: fields set (dotted paths into embedded documents and array
// elements), fields removed, and arrays cut shorter.
func UpdateDescription(old, next bson.D) bson.D {
	var d differ
	d.docs("", old, next)
	if d.updated == nil {
		d.updated = bson.D{}
	}
	if d.removed == nil {
		d.removed = bson.A{}
	}
	if d.truncated == nil {
		d.truncated = bson.A{}
	}
	return bson.D{
		{Key: "updatedFields", Value: d.updated},
		{Key: "removedFields", Value: d.removed},
		{Key: "truncatedArrays", Value: d.truncated},
	}
}

type differ struct {
	updated   bson.D
	removed   bson.A
	truncated bson.A
}

func (d *differ) docs(prefix string, old, next bson.D) {
	for _, e := range next {
		ov, ok := field(old, e.Key)
		if !ok {
			d.set(prefix+e.Key, e.Value)
			continue
		}
		d.value(prefix+e.Key, ov, e.Value)
	}
	for _, e := range old {
		if _, ok := field(next, e.Key); !ok {
			d.removed = append(d.removed, prefix+e.Key)
		}
	}
}

// value records how the value at path went from old to next: embedded
// documents and arrays are compared inside, anything else is set whole
// when it differs (in value or in type: 1 and 1.0 are different here).
func (d *differ) value(path string, old, next any) {
	switch n := next.(type) {
	case bson.D:
		if o, ok := old.(bson.D); ok {
			d.docs(path+".", o, n)
			return
		}
	case bson.A:
		if o, ok := old.(bson.A); ok {
			d.arrays(path, o, n)
			return
		}
	}
	if !same(old, next) {
		d.set(path, next)
	}
}

func (d *differ) arrays(path string, old, next bson.A) {
	if len(next) < len(old) {
		d.truncated = append(d.truncated, bson.D{{Key: "field", Value: path}, {Key: "newSize", Value: int32(len(next))}})
	}
	for i, v := range next {
		p := path + "." + strconv.Itoa(i)
		if i < len(old) {
			d.value(p, old[i], v)
		} else {
			d.set(p, v)
		}
	}
}

func (d *differ) set(path string, v any) { d.updated = append(d.updated, bson.E{Key: path, Value: v}) }

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
