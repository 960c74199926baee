package expr

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Under a non-simple collation MongoDB compares the strings an expression
// compares ($eq, $in, the set operators, $min, ...) as the collation
// orders them. A collator turns a value's strings into sort keys that
// compare bytewise as the strings compare under the collation, so an
// operator that only compares runs on keyed arguments, and one that
// returns some of its arguments runs on keyed arguments and then hands
// back the original values that were keyed. Operators that build strings
// ($concat, $toUpper, ...) see the original values.

// Collator keys the strings of a value (internal/collation implements it).
type Collator interface {
	Value(v any) any
}

// collationKey holds the Collator among an evaluation's variables; no user
// variable can have this name.
const collationKey = "\x00collation"

// WithCollation makes every Eval given vars (or a copy of them) compare
// strings under c.
func WithCollation(vars map[string]any, c Collator) map[string]any {
	if vars == nil {
		vars = map[string]any{}
	}
	vars[collationKey] = c
	return vars
}

// CollatorOf returns the collator vars carry, nil for none.
func CollatorOf(vars map[string]any) Collator {
	c, _ := vars[collationKey].(Collator)
	return c
}

// collatedUse says how an operator meets a collation.
type collatedUse int

const (
	binaryUse   collatedUse = iota // compares no strings, or builds them
	keyedUse                       // compares and returns no argument
	restoredUse                    // compares and returns argument values
)

func collatedUseOf(name string) collatedUse {
	switch name {
	case "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$cmp", "$in", "$indexOfArray", "$setEquals", "$setIsSubset":
		return keyedUse
	case "$setUnion", "$setIntersection", "$setDifference", "$min", "$max":
		return restoredUse
	}
	return binaryUse
}

// evalCollated applies f to vals under the collation coll.
func evalCollated(coll Collator, name string, vals []any, f evalFn) (any, error) {
	use := collatedUseOf(name)
	if use == binaryUse {
		return f(name, vals)
	}
	keyed := make([]any, len(vals))
	for i, v := range vals {
		keyed[i] = coll.Value(v)
	}
	out, err := f(name, keyed)
	if err != nil || use == keyedUse {
		return out, err
	}
	return newRestorer(vals, keyed).Restore(out), nil
}

// Originals maps keyed values back to the first original value keyed to
// them.
type Originals map[string]any

// newRestorer maps back the arguments and, for arrays, their elements.
func newRestorer(vals, keyed []any) Originals {
	r := Originals{}
	for i, v := range vals {
		r.Add(keyed[i], v)
		if a, ok := v.(bson.A); ok {
			ka, _ := keyed[i].(bson.A)
			for j := range a {
				if j < len(ka) {
					r.Add(ka[j], a[j])
				}
			}
		}
	}
	return r
}

// Add records that orig was keyed to keyed, unless a value was before.
func (r Originals) Add(keyed, orig any) {
	k := exactKey(keyed)
	if _, ok := r[k]; !ok {
		r[k] = orig
	}
}

// Restore maps out, or each element of an array out, back.
func (r Originals) Restore(out any) any {
	if a, ok := out.(bson.A); ok {
		res := make(bson.A, len(a))
		for i, x := range a {
			res[i] = r.one(x)
		}
		return res
	}
	return r.one(out)
}

func (r Originals) one(x any) any {
	if orig, ok := r[exactKey(x)]; ok {
		return orig
	}
	return x
}

// exactKey identifies a value by its exact BSON encoding.
func exactKey(v any) string {
	b, err := bson.Marshal(bson.D{{Key: "v", Value: v}})
	if err != nil {
		return ""
	}
	return string(b)
}
