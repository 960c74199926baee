package ddl

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Clustered collections (create's clusteredIndex and expireAfterSeconds),
// with mongod 8.0's rules, in its order: the options' types as its IDL
// parser checks them, then the clustered creation options, then the
// collection options (expireAfterSeconds needs a clustered collection),
// then the clustered index spec and the expireAfterSeconds range.

// CreateClustered reads create's clusteredIndex and expireAfterSeconds
// into opt; now bounds expireAfterSeconds as mongod's clock does.
func CreateClustered(opts bson.D, opt *docstore.CreateOptions, now time.Time) error {
	ci, hasCI := bsonutil.Field(opts, catalog.ClusteredIndexOption)
	eas, hasEAS := bsonutil.Field(opts, catalog.ExpireAfterOption)
	var secs int64
	if hasEAS {
		n, err := safeInt64("create", catalog.ExpireAfterOption, eas)
		if err != nil {
			return err
		}
		secs = n
	}
	spec, clustered, err := parseClusteredIndex(ci, hasCI)
	if err != nil {
		return err
	}
	if clustered {
		if err := clusteredCreationOptions(opts); err != nil {
			return err
		}
	}
	if _, timeseries := bsonutil.Field(opts, "timeseries"); hasEAS && !clustered && !timeseries {
		return mongoerr.New(mongoerr.InvalidOptions, "'expireAfterSeconds' can be used only for clustered collections or timeseries collections")
	}
	if !clustered {
		return nil
	}
	if err := clusteredWithOthers(opts); err != nil {
		return err
	}
	if err := spec.Validate(secs, hasEAS, now); err != nil {
		return err
	}
	opt.Clustered, opt.ClusteredTTL, opt.ExpireAfter = true, hasEAS, secs
	opt.Raw = append(opt.Raw, bson.E{Key: catalog.ClusteredIndexOption, Value: spec.Doc()})
	if hasEAS {
		opt.Raw = append(opt.Raw, bson.E{Key: catalog.ExpireAfterOption, Value: secs})
	}
	return nil
}

// parseClusteredIndex reads clusteredIndex as create's IDL does: a bool
// (the legacy form, for internal collections only) or a document.
func parseClusteredIndex(v any, present bool) (catalog.ClusteredIndex, bool, error) {
	var s catalog.ClusteredIndex
	if !present {
		return s, false, nil
	}
	switch x := v.(type) {
	case bool:
		if !x {
			return s, false, nil
		}
		return s, false, mongoerr.New(mongoerr.Location5979703, "The 'clusteredIndex' legacy format {clusteredIndex: <bool>} is only supported for specific internal collections and vice versa")
	case bson.D:
		return parseClusteredSpec(x)
	}
	return s, false, mongoerr.WrongType("create", catalog.ClusteredIndexOption, v, "[bool, object]")
}

// parseClusteredSpec reads clusteredIndex as mongod's IDL parser does:
// field by field in the document's order (an unknown field or a wrong
// type fails where it stands), then the required fields.
func parseClusteredSpec(d bson.D) (catalog.ClusteredIndex, bool, error) {
	s := catalog.ClusteredIndex{V: 2}
	seen := map[string]bool{}
	for _, e := range d {
		if err := setClusteredField(&s, e); err != nil {
			return s, false, err
		}
		seen[e.Key] = true
	}
	for _, f := range []string{"key", "unique"} {
		if !seen[f] {
			return s, false, mongoerr.Newf(mongoerr.Location40414, "BSON field 'create.%s.%s' is missing but a required field", catalog.ClusteredIndexOption, f)
		}
	}
	return s, true, nil
}

func setClusteredField(s *catalog.ClusteredIndex, e bson.E) error {
	field := catalog.ClusteredIndexOption + "." + e.Key
	var ok bool
	switch e.Key {
	case "v":
		if !bsonutil.IsNumber(e.Value) {
			return mongoerr.WrongType("create", field, e.Value, numberTypes)
		}
		s.V, _ = safeInt64("create", field, e.Value)
	case "key":
		if s.Key, ok = e.Value.(bson.D); !ok {
			return mongoerr.WrongType("create", field, e.Value, "object")
		}
	case "name":
		if s.Name, ok = e.Value.(string); !ok {
			return mongoerr.WrongType("create", field, e.Value, "string")
		}
	case "unique":
		var err error
		if s.Unique, err = safeBool("create", field, e.Value); err != nil {
			return err
		}
	default:
		return mongoerr.Newf(mongoerr.Location40415, "BSON field 'create.%s' is an unknown field.", field)
	}
	return nil
}

// clusteredCreationOptions refuses what mongod refuses beside a
// clusteredIndex before anything else: a capped collection's size and
// max, and capped itself (mongod offers capped clustered collections to
// its own tests only; Mayfly has none).
func clusteredCreationOptions(opts bson.D) error {
	if _, ok := bsonutil.Field(opts, "size"); ok {
		return mongoerr.New(mongoerr.Location6049200, "'size' field for capped collections is not allowed on clustered collections. Did you mean 'capped: true' with 'expireAfterSeconds'?")
	}
	if _, ok := bsonutil.Field(opts, "max"); ok {
		return mongoerr.New(mongoerr.Location6049204, "'max' field for capped collections is not allowed on clustered collections. Did you mean 'capped: true' with 'expireAfterSeconds'?")
	}
	if v, ok := bsonutil.Field(opts, "capped"); ok {
		if capped, _ := safeBool("create", "capped", v); capped {
			return mongoerr.New(mongoerr.Location6127800, "Clustered capped collection only available with 'enableTestCommands' server parameter")
		}
	}
	return nil
}

// clusteredWithOthers refuses the create options a clustered collection
// cannot have.
func clusteredWithOthers(opts bson.D) error {
	if v, ok := bsonutil.Field(opts, "idIndex"); ok {
		if d, isDoc := v.(bson.D); !isDoc || len(d) > 0 {
			return mongoerr.New(mongoerr.InvalidOptions, "The 'clusteredIndex' option is not supported with the 'idIndex' option")
		}
	}
	if v, ok := bsonutil.Field(opts, "autoIndexId"); ok && v == false {
		return mongoerr.New(mongoerr.Location6026501, "The 'clusteredIndex' option does not support {autoIndexId: false}")
	}
	return nil
}

// clusteredExpiryMod reads collMod's top-level expireAfterSeconds: a
// number, or "off" (-1) to remove it, on a clustered collection only. It
// is read before collMod applies anything, as mongod parses the whole
// request first; set is false when the field is absent.
func clusteredExpiryMod(e *docstore.CatalogEdit, opts bson.D, now time.Time) (secs int64, set bool, err error) {
	v, ok := bsonutil.Field(opts, catalog.ExpireAfterOption)
	if !ok {
		return 0, false, nil
	}
	if !e.IsClustered() {
		return 0, false, mongoerr.New(mongoerr.InvalidOptions, "'expireAfterSeconds' option is only supported on collections clustered by _id")
	}
	if s, isString := v.(string); isString {
		if s != "off" {
			return 0, false, mongoerr.Newf(mongoerr.InvalidOptions, "Invalid string value for the 'clusteredIndex::expireAfterSeconds' option. Got: '%s'. Accepted value is 'off'", s)
		}
		return -1, true, nil
	}
	if !bsonutil.IsNumber(v) {
		return 0, false, mongoerr.WrongType("collMod", catalog.ExpireAfterOption, v, "[string, long, int, decimal, double]")
	}
	secs, _ = safeInt64("collMod", catalog.ExpireAfterOption, v)
	return secs, true, catalog.ValidateClusteredExpiry(secs, now)
}
