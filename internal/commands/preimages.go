package commands

import (
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/docstore"
)

// preImagesOption is changestream.PreImagesOption, by the name create
// and collMod check it under.
const preImagesOption = changestream.PreImagesOption

// preImagesArg reads the option from r (changestream.ParsePreImages);
// found is false when r does not set it.
func preImagesArg(r *request) (on, found bool, err error) {
	v, found := bsonutil.Field(r.body, preImagesOption)
	if !found {
		return false, false, nil
	}
	on, err = changestream.ParsePreImages(r.name, v)
	return on, true, err
}

// createPreImages applies create's option to the new collection's options.
func createPreImages(r *request, opt *docstore.CreateOptions) error {
	on, found, err := preImagesArg(r)
	if found && err == nil {
		opt.Raw = changestream.WithPreImages(opt.Raw, on)
	}
	return err
}

// collModPreImages switches the option on an existing collection.
func collModPreImages(e *docstore.CatalogEdit, r *request) error {
	on, found, err := preImagesArg(r)
	if found && err == nil {
		e.SetOptions(changestream.WithPreImages(e.Meta().Options, on))
	}
	return err
}
