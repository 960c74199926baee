package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/validator"
)

// A collection's schema validation is a rule of the collection: create and
// collMod set its validator, validationLevel and validationAction among
// its options (as listCollections shows them), and docstore applies it on
// every write (internal/validator) unless the write carries
// bypassDocumentValidation.

// validationOptions reads validator, validationLevel and validationAction
// from a create or collMod command; ok is false when none is there.
func validationOptions(body bson.D, cmd string) (opts bson.D, ok bool, err error) {
	v, hasValidator := bsonutil.Field(body, "validator")
	level, hasLevel := bsonutil.Field(body, "validationLevel")
	action, hasAction := bsonutil.Field(body, "validationAction")
	if !hasValidator && !hasLevel && !hasAction {
		return nil, false, nil
	}
	if hasValidator {
		d, isDoc := v.(bson.D)
		if !isDoc {
			return nil, false, wrongType(cmd, "validator", v, "object")
		}
		if err := validator.Check(d); err != nil {
			return nil, false, err
		}
		opts = append(opts, bson.E{Key: "validator", Value: d})
	}
	if hasLevel {
		s, err := enumArg(cmd+".validationLevel", level, "off", "strict", "moderate")
		if err != nil {
			return nil, false, err
		}
		opts = append(opts, bson.E{Key: "validationLevel", Value: s})
	}
	if hasAction {
		s, err := enumArg(cmd+".validationAction", action, "error", "warn")
		if err != nil {
			return nil, false, err
		}
		opts = append(opts, bson.E{Key: "validationAction", Value: s})
	}
	return opts, true, nil
}

// withValidationDefaults gives a validator mongod's defaults for the
// level and action, as listCollections reports them.
func withValidationDefaults(opts bson.D) bson.D {
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

func isValidationOption(k string) bool {
	return k == "validator" || k == "validationLevel" || k == "validationAction"
}

// collModValidation applies collMod's validation options.
func collModValidation(e *docstore.CatalogEdit, r *request) error {
	opts, ok, err := validationOptions(r.body, "collMod")
	if err != nil || !ok {
		return err
	}
	e.SetOptions(withValidationDefaults(bsonutil.WithFields(e.Meta().Options, opts)))
	return nil
}

// bypassArg reads bypassDocumentValidation.
func bypassArg(r *request) (bool, error) {
	return optBool(r, "bypassDocumentValidation")
}
