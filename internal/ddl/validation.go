package ddl

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/validator"
)

// A collection's schema validation is a rule of the collection: create and
// collMod set its validator, validationLevel and validationAction among
// its options (as listCollections shows them), and docstore applies it on
// every write (internal/validator) unless the write carries
// bypassDocumentValidation.

// IsValidationOption reports whether k is one of those three options.
func IsValidationOption(k string) bool {
	return k == "validator" || k == "validationLevel" || k == "validationAction"
}

// ValidationOptions reads validator, validationLevel and validationAction
// from a create or collMod command (cmd); ok is false when none is there.
func ValidationOptions(opts bson.D, cmd string) (out bson.D, ok bool, err error) {
	v, hasValidator := bsonutil.Field(opts, "validator")
	level, hasLevel := bsonutil.Field(opts, "validationLevel")
	action, hasAction := bsonutil.Field(opts, "validationAction")
	if !hasValidator && !hasLevel && !hasAction {
		return nil, false, nil
	}
	if hasValidator {
		d, isDoc := v.(bson.D)
		if !isDoc {
			return nil, false, mongoerr.WrongType(cmd, "validator", v, "object")
		}
		if err := validator.Check(d); err != nil {
			return nil, false, err
		}
		out = append(out, bson.E{Key: "validator", Value: d})
	}
	if hasLevel {
		s, err := mongoerr.Enum(cmd+".validationLevel", level, "off", "strict", "moderate")
		if err != nil {
			return nil, false, err
		}
		out = append(out, bson.E{Key: "validationLevel", Value: s})
	}
	if hasAction {
		s, err := mongoerr.Enum(cmd+".validationAction", action, "error", "warn")
		if err != nil {
			return nil, false, err
		}
		out = append(out, bson.E{Key: "validationAction", Value: s})
	}
	return out, true, nil
}

// WithValidationDefaults gives a validator mongod's defaults for the
// level and action, as listCollections reports them.
func WithValidationDefaults(opts bson.D) bson.D {
	if _, ok := bsonutil.Field(opts, "validator"); !ok {
		return opts
	}
	if _, ok := bsonutil.Field(opts, "validationLevel"); !ok {
		opts = append(opts, bson.E{Key: "validationLevel", Value: "strict"})
	}
	if _, ok := bsonutil.Field(opts, "validationAction"); !ok {
		opts = append(opts, bson.E{Key: "validationAction", Value: "error"})
	}
	return opts
}

// ModValidation applies collMod's validation options to the edit.
func ModValidation(e *docstore.CatalogEdit, opts bson.D) error {
	v, ok, err := ValidationOptions(opts, "collMod")
	if err != nil || !ok {
		return err
	}
	e.SetOptions(WithValidationDefaults(bsonutil.WithFields(e.Meta().Options, v)))
	return nil
}
