package catalog

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// allowedOptions are the index options MongoDB accepts in a specification
// that Mayfly implements or can accept without effect.
var allowedOptions = map[string]bool{
	"v": true, "key": true, "name": true, "ns": true, "unique": true, "sparse": true,
	"partialFilterExpression": true, "expireAfterSeconds": true, "hidden": true,
	"background": true, "storageEngine": true, "dropDups": true, "prepareUnique": true,
	"collation": true, "expiryWarningSeconds": true, RefreshOnReadOption: true, LRULimitOption: true,
	ExpireElementsOption: true,
}

// unsupportedOptions are valid MongoDB index options for features Mayfly
// does not have; they fail loudly rather than being ignored.
var unsupportedOptions = map[string]string{
	"weights": "text", "default_language": "text",
	"language_override": "text", "textIndexVersion": "text", "2dsphereIndexVersion": "2dsphere",
	"bits": "2d", "min": "2d", "max": "2d", "bucketSize": "geoHaystack",
	"wildcardProjection": "wildcard", "clustered": "clustered",
}

// boolOptions are the flags mongod accepts as a bool or a number only.
var boolOptions = map[string]bool{
	"unique": true, "sparse": true, "background": true, "dropDups": true, "prepareUnique": true,
}

// idIndexOptions are the only fields MongoDB allows in an _id index spec.
var idIndexOptions = map[string]bool{"v": true, "key": true, "name": true, "ns": true, "collation": true}

// ParseIndexSpec validates one createIndexes specification and returns the
// index it describes (without ID). Errors carry MongoDB's codes and messages.
func ParseIndexSpec(spec bson.D) (*Index, error) {
	key, err := specKey(spec)
	if err != nil {
		return nil, err
	}
	fields, err := parseKeyPattern(key, spec)
	if err != nil {
		return nil, err
	}
	ix := &Index{Fields: fields, Ready: true, MultiKeyTracked: true}
	ix.Name, err = specName(spec)
	if err != nil {
		return nil, err
	}
	if isIDKey(fields) {
		if err := checkIDSpec(spec); err != nil {
			return nil, err
		}
	}
	if err := applyOptions(ix, spec); err != nil {
		return nil, err
	}
	ix.Spec = storedSpec(spec, key, ix.Name)
	if ix.Collation != nil {
		ix.Spec = append(ix.Spec, bson.E{Key: "collation", Value: ix.Collation})
	}
	return ix, nil
}

func specKey(spec bson.D) (bson.D, error) {
	v, ok := bsonutil.Field(spec, "key")
	if !ok {
		return nil, mongoerr.Newf(mongoerr.FailedToParse, "Error in specification %s :: caused by :: The 'key' field is a required property of an index specification", bsonutil.Format(spec))
	}
	key, ok := v.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.TypeMismatch, "The field 'key' must be an object, but got %s", bsonutil.TypeName(v))
	}
	if len(key) == 0 {
		return nil, mongoerr.New(mongoerr.CannotCreateIndex, "Index keys cannot be empty.")
	}
	return key, nil
}

func parseKeyPattern(key bson.D, spec bson.D) ([]Field, error) {
	fields := make([]Field, 0, len(key))
	seen := map[string]bool{}
	for _, e := range key {
		f, err := parseKeyField(e, spec)
		if err != nil {
			return nil, err
		}
		if seen[f.Path] {
			return nil, mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: Index key pattern contains duplicate field: %s", bsonutil.Format(spec), f.Path)
		}
		seen[f.Path] = true
		fields = append(fields, f)
	}
	return fields, checkHashedFields(key, fields)
}

func parseKeyField(e bson.E, spec bson.D) (Field, error) {
	if err := checkKeyPath(e.Key, spec); err != nil {
		return Field{}, err
	}
	if s, ok := e.Value.(string); ok {
		if s == HashedKey {
			return Field{Path: e.Key, Hashed: true}, nil
		}
		return Field{}, unsupportedPlugin(s, spec)
	}
	if !bsonutil.IsNumber(e.Value) {
		return Field{}, mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: Values in the index key pattern can only be numbers or strings, found %s for field: %s", bsonutil.Format(spec), bsonutil.TypeName(e.Value), e.Key)
	}
	f := bsonutil.ToFloat(e.Value)
	if f == 0 || math.IsNaN(f) {
		return Field{}, mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: Values in the index key pattern can't be zero or NaN", bsonutil.Format(spec))
	}
	return Field{Path: e.Key, Desc: f < 0}, nil
}

func checkKeyPath(path string, spec bson.D) error {
	if strings.HasSuffix(path, "$**") {
		return unsupportedPlugin("wildcard", spec)
	}
	if path == "" || strings.HasPrefix(path, ".") || strings.HasSuffix(path, ".") || strings.Contains(path, "..") {
		return mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: Index keys cannot be an empty field.", bsonutil.Format(spec))
	}
	for _, part := range strings.Split(path, ".") {
		if strings.HasPrefix(part, "$") {
			return mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: Index key contains an illegal field name: field name starts with '$'.", bsonutil.Format(spec))
		}
	}
	return nil
}

func unsupportedPlugin(name string, spec bson.D) error {
	switch name {
	case "text", "2dsphere", "2d", "geoHaystack", "wildcard", "columnstore":
		return mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: Index type '%s' is not supported by Mayfly", bsonutil.Format(spec), name)
	}
	return mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: Unknown index plugin '%s'", bsonutil.Format(spec), name)
}

func specName(spec bson.D) (string, error) {
	v, ok := bsonutil.Field(spec, "name")
	if !ok {
		// Drivers and shells always send one; mongod refuses a spec
		// without it rather than making one up.
		return "", mongoerr.Newf(mongoerr.FailedToParse, "Error in specification %s :: caused by :: The 'name' field is a required property of an index specification", bsonutil.Format(spec))
	}
	name, ok := v.(string)
	if !ok {
		return "", mongoerr.Newf(mongoerr.TypeMismatch, "The field 'name' must be a string, but got %s", bsonutil.TypeName(v))
	}
	if name == "" {
		return "", mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: index name cannot be empty", bsonutil.Format(spec))
	}
	if name == "*" {
		return "", mongoerr.Newf(mongoerr.BadValue, "Error in specification %s :: caused by :: The index name '*' is not valid.", bsonutil.Format(spec))
	}
	return name, nil
}

// GenerateName builds the default index name as MongoDB does: each key
// field and its value joined with underscores ("a_1_b_-1").
func GenerateName(key bson.D) string {
	parts := make([]string, 0, 2*len(key))
	for _, e := range key {
		parts = append(parts, e.Key, keyValueString(e.Value))
	}
	return strings.Join(parts, "_")
}

func keyValueString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int32:
		return strconv.Itoa(int(x))
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return bsonutil.Format(v)
}

func isIDKey(fields []Field) bool {
	return len(fields) == 1 && fields[0].Path == "_id"
}

func checkIDSpec(spec bson.D) error {
	for _, e := range spec {
		if !idIndexOptions[e.Key] {
			return mongoerr.Newf(mongoerr.InvalidIndexSpecificationOption, "The field '%s' is not valid for an _id index specification. Specification: %s", e.Key, bsonutil.Format(spec))
		}
	}
	return nil
}

func applyOptions(ix *Index, spec bson.D) error {
	for _, e := range spec {
		if err := applyOption(ix, e, spec); err != nil {
			return err
		}
	}
	if ix.WarnBefore > 0 && !ix.TTL {
		return mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: 'expiryWarningSeconds' is an option of TTL indexes: it needs 'expireAfterSeconds'", bsonutil.Format(spec))
	}
	if err := checkExpireElements(ix, spec); err != nil {
		return err
	}
	if ix.RefreshOnRead && !ix.TTL {
		return mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: The '%s' option requires 'expireAfterSeconds'", bsonutil.Format(spec), RefreshOnReadOption)
	}
	if err := checkHashedOptions(ix, spec); err != nil {
		return err
	}
	if ix.Sparse && ix.Partial != nil {
		return mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: cannot mix \"partialFilterExpression\" and \"sparse\" options", bsonutil.Format(spec))
	}
	return nil
}

func applyOption(ix *Index, e bson.E, spec bson.D) error {
	if feature, ok := unsupportedOptions[e.Key]; ok {
		return mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: the '%s' option (%s) is not supported by Mayfly", bsonutil.Format(spec), e.Key, feature)
	}
	if !allowedOptions[e.Key] {
		return mongoerr.Newf(mongoerr.InvalidIndexSpecificationOption, "The field '%s' is not valid for an index specification. Specification: %s", e.Key, bsonutil.Format(spec))
	}
	if boolOptions[e.Key] && !bsonutil.IsNumber(e.Value) {
		if _, isBool := e.Value.(bool); !isBool {
			return mongoerr.Newf(mongoerr.TypeMismatch, "Error in specification %s :: caused by :: The field '%s has value %s: %s, which is not convertible to bool", bsonutil.Format(spec), e.Key, e.Key, bsonutil.Format(e.Value))
		}
	}
	switch e.Key {
	case "collation":
		return applyCollation(ix, e.Value)
	case "unique":
		ix.Unique = bsonutil.TrueValue(e.Value)
	case "prepareUnique":
		ix.PrepareUnique = bsonutil.TrueValue(e.Value)
	case "sparse":
		ix.Sparse = bsonutil.TrueValue(e.Value)
	case "hidden":
		return applyHidden(ix, e.Value, spec)
	case "partialFilterExpression":
		return applyPartial(ix, e.Value, spec)
	case "expireAfterSeconds":
		return applyTTL(ix, e.Value, spec)
	case "expiryWarningSeconds":
		return applyWarning(ix, e.Value, spec)
	case RefreshOnReadOption:
		return applyRefreshOnRead(ix, e.Value, spec)
	case LRULimitOption:
		return applyLRULimit(ix, e.Value, spec)
	case ExpireElementsOption:
		return applyExpireElements(ix, e.Value, spec)
	case "v":
		return checkVersion(e.Value, spec)
	}
	return nil
}

// applyCollation records a non-simple collation. The index stores the
// collation's keys of its strings (internal/docstore's indexkeys.go), so
// a unique index holds one string per collation-equal group, and only a
// query under the same collation bounds its strings.
func applyCollation(ix *Index, v any) error {
	c, err := collation.Parse(v)
	if err != nil || c == nil {
		return err
	}
	ix.Collation, ix.CollatedKeys = c.Spec(), true
	return nil
}

func applyHidden(ix *Index, v any, spec bson.D) error {
	b, ok := v.(bool)
	if !ok {
		return mongoerr.Newf(mongoerr.TypeMismatch, "Error in specification %s :: caused by :: The field 'hidden' must be a bool, but got %s", bsonutil.Format(spec), bsonutil.TypeName(v))
	}
	if b && isIDKey(ix.Fields) {
		return mongoerr.New(mongoerr.BadValue, "can't hide _id index")
	}
	ix.Hidden = b
	return nil
}

func applyPartial(ix *Index, v any, spec bson.D) error {
	d, ok := v.(bson.D)
	if !ok {
		return mongoerr.Newf(mongoerr.TypeMismatch, "Error in specification %s :: caused by :: The field 'partialFilterExpression' must be an object, but got %s", bsonutil.Format(spec), bsonutil.TypeName(v))
	}
	ix.Partial = d
	return nil
}

func checkVersion(v any, spec bson.D) error {
	if !bsonutil.IsNumber(v) {
		return mongoerr.Newf(mongoerr.TypeMismatch, "Error in specification %s :: caused by :: The field 'v' must be a number, but got %s", bsonutil.Format(spec), bsonutil.TypeName(v))
	}
	if n := bsonutil.ToFloat(v); n != 1 && n != 2 {
		return mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: Invalid index specification %s; cannot create an index with v=%s", bsonutil.Format(spec), bsonutil.Format(spec), bsonutil.Format(v))
	}
	return nil
}

func applyTTL(ix *Index, v any, spec bson.D) error {
	secs, err := ValidateExpireAfterSeconds(v)
	if err != nil {
		return mongoerr.Newf(mongoerr.CannotCreateIndex, ". Index spec: %s :: caused by :: %s", bsonutil.Format(spec), mongoerr.As(err).Msg)
	}
	if len(ix.Fields) != 1 {
		return mongoerr.Newf(mongoerr.CannotCreateIndex, "TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: %s", bsonutil.Format(spec))
	}
	ix.TTL = true
	ix.ExpireAfter = secs
	return nil
}

// WarningOption is the TTL index option that asks for expiry warnings.
const WarningOption = "expiryWarningSeconds"

// applyWarning reads expiryWarningSeconds, Mayfly's TTL index option: change
// streams get an "expiring" event that many seconds before each document
// expires (docs/design/0012).
func applyWarning(ix *Index, v any, spec bson.D) error {
	f := bsonutil.ToFloat(v)
	if !bsonutil.IsNumber(v) || f != math.Trunc(f) || f < 1 || f > math.MaxInt32 {
		return mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: 'expiryWarningSeconds' must be a whole number of seconds from 1 to 2147483647", bsonutil.Format(spec))
	}
	ix.WarnBefore = int64(f)
	return nil
}

// ValidateExpireAfterSeconds applies MongoDB's rules for expireAfterSeconds
// in their order: numeric, not NaN, within int32, not negative. Fractions are
// truncated. The error's message is MongoDB's reason text; callers give it
// their own code and context (67 for createIndexes, 72 for collMod).
func ValidateExpireAfterSeconds(v any) (int64, error) {
	if !bsonutil.IsNumber(v) {
		return 0, mongoerr.Newf(mongoerr.CannotCreateIndex, "TTL index 'expireAfterSeconds' option must be numeric, but received a type of '%s", bsonutil.TypeName(v))
	}
	f := bsonutil.ToFloat(v)
	if math.IsNaN(f) {
		return 0, mongoerr.New(mongoerr.CannotCreateIndex, "TTL index 'expireAfterSeconds' option must not be NaN")
	}
	if f >= 2147483648 || f < -2147483648 {
		return 0, mongoerr.New(mongoerr.CannotCreateIndex, "TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer")
	}
	if f < 0 {
		return 0, mongoerr.New(mongoerr.CannotCreateIndex, "TTL index 'expireAfterSeconds' option cannot be less than 0")
	}
	return int64(f), nil
}

// storedSpec is the spec as listIndexes returns it: v first, then key and
// name, then the remaining options in request order.
func storedSpec(spec bson.D, key bson.D, name string) bson.D {
	out := bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: key}, {Key: "name", Value: name}}
	for _, e := range spec {
		switch e.Key {
		case "v", "key", "name", "ns", "collation":
			continue
		case RefreshOnReadOption, ExpireElementsOption:
			if e.Value == true {
				out = append(out, e)
			}
		case "expireAfterSeconds", "expiryWarningSeconds":
			out = append(out, bson.E{Key: e.Key, Value: int32(bsonutil.ToFloat(e.Value))})
		default:
			out = append(out, e)
		}
	}
	return out
}

// IDIndex returns the definition of the _id index every collection has.
func IDIndex() Index {
	key := bson.D{{Key: "_id", Value: int32(1)}}
	return Index{
		Name:   IDIndexName,
		Fields: []Field{{Path: "_id"}},
		Unique: true,
		Spec:   bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: key}, {Key: "name", Value: IDIndexName}},
		Ready:  true,
	}
}

// String describes an index for logs.
func (ix *Index) String() string { return fmt.Sprintf("%s %v", ix.Name, ix.Fields) }

// RefreshOnReadOption is the TTL index option that makes reads keep
// documents alive.
const RefreshOnReadOption = "refreshOnRead"

// applyRefreshOnRead takes a bool only, as mongod takes hidden; whether
// the index is a TTL index is checked once every option is read.
func applyRefreshOnRead(ix *Index, v any, spec bson.D) (err error) {
	ix.RefreshOnRead, err = boolOption(v, RefreshOnReadOption, spec)
	return err
}

// boolOption reads the index option name, which takes a bool only.
func boolOption(v any, name string, spec bson.D) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, mongoerr.Newf(mongoerr.TypeMismatch, "Error in specification %s :: caused by :: The field '%s' must be a bool, but got %s", bsonutil.Format(spec), name, bsonutil.TypeName(v))
	}
	return b, nil
}

// ExpireElementsOption is the TTL index option that expires the elements
// of an array of subdocuments instead of the document.
const ExpireElementsOption = "expireElements"

func applyExpireElements(ix *Index, v any, spec bson.D) (err error) {
	ix.ExpireElements, err = boolOption(v, ExpireElementsOption, spec)
	return err
}

// ModExpireElements turns ix's expireElements on or off, for collMod,
// with createIndexes' rules; spec is the index's for messages.
func ModExpireElements(ix *Index, on bool, spec bson.D) error {
	next := *ix
	next.ExpireElements = on
	if err := checkExpireElements(&next, spec); err != nil {
		return err
	}
	ix.ExpireElements = on
	return nil
}

// checkExpireElements: a TTL index on a dotted path (the array, then the
// date inside each element), and neither refreshOnRead nor lruLimit,
// which act on whole documents.
func checkExpireElements(ix *Index, spec bson.D) error {
	if !ix.ExpireElements {
		return nil
	}
	reason := ""
	switch {
	case !ix.TTL:
		reason = "The 'expireElements' option requires 'expireAfterSeconds'"
	case !strings.Contains(ix.Fields[0].Path, "."):
		reason = "The 'expireElements' option needs a path through an array of subdocuments, such as 'items.addedAt'"
	case ix.RefreshOnRead || ix.HasLRU():
		reason = "The 'expireElements' option cannot be combined with 'refreshOnRead' or 'lruLimit'"
	}
	if reason == "" {
		return nil
	}
	return mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: %s", bsonutil.Format(spec), reason)
}
