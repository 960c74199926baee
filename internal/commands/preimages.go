package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// changeStreamPreAndPostImages, set by create and collMod, makes a
// collection's change events carry the document before the change
// (fullDocumentBeforeChange) and after an update (fullDocument:
// whenAvailable / required). Its value is {enabled: <bool>}.
const preImagesOption = "changeStreamPreAndPostImages"

// parsePreImages reads the option's value as mongod's IDL does.
func parsePreImages(cmd string, v any) (bool, error) {
	d, ok := v.(bson.D)
	if !ok {
		return false, wrongType(cmd, preImagesOption, v, "object")
	}
	on, found := false, false
	for _, e := range d {
		if e.Key != "enabled" {
			return false, mongoerr.Newf(mongoerr.Location40415, "BSON field '%s.%s.%s' is an unknown field.", cmd, preImagesOption, e.Key)
		}
		b, isBool := e.Value.(bool)
		if !isBool {
			return false, wrongType(cmd, preImagesOption+".enabled", e.Value, "bool")
		}
		on, found = b, true
	}
	if !found {
		return false, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.%s.enabled' is missing but a required field", cmd, preImagesOption)
	}
	return on, nil
}

// withPreImages returns options with the setting applied: kept when on,
// left out when off, as listCollections shows it.
func withPreImages(opts bson.D, on bool) bson.D {
	out := make(bson.D, 0, len(opts)+1)
	for _, e := range opts {
		if e.Key != preImagesOption {
			out = append(out, e)
		}
	}
	if on {
		out = append(out, bson.E{Key: preImagesOption, Value: bson.D{{Key: "enabled", Value: true}}})
	}
	return out
}

// createPreImages applies create's option to the new collection's options.
func createPreImages(r *request, opt *docstore.CreateOptions) error {
	v, ok := bsonutil.Field(r.body, preImagesOption)
	if !ok {
		return nil
	}
	on, err := parsePreImages(r.name, v)
	if err != nil {
		return err
	}
	opt.Raw = withPreImages(opt.Raw, on)
	return nil
}

// collModPreImages switches the option on an existing collection.
func collModPreImages(e *docstore.CatalogEdit, r *request) error {
	v, ok := bsonutil.Field(r.body, preImagesOption)
	if !ok {
		return nil
	}
	on, err := parsePreImages(r.name, v)
	if err != nil {
		return err
	}
	e.SetOptions(withPreImages(e.Meta().Options, on))
	return nil
}
