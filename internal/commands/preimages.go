package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// preImagesOption is changestream.PreImagesOption, by the name create
// and collMod check it under. This file parses it: its value as mongod's
// IDL reads it, into the collection's options.
const preImagesOption = changestream.PreImagesOption

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
	opt.Raw = changestream.WithPreImages(opt.Raw, on)
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
	e.SetOptions(changestream.WithPreImages(e.Meta().Options, on))
	return nil
}
