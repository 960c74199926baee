package changestream

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// PreImagesOption, a collection option set by create and collMod, makes
// the collection's change events carry the document before the change
// (fullDocumentBeforeChange) and after an update (fullDocument:
// whenAvailable / required). Its value is {enabled: <bool>}.
const PreImagesOption = "changeStreamPreAndPostImages"

// WithPreImages returns collection options with PreImagesOption applied:
// kept when on, left out when off, as listCollections shows it.
func WithPreImages(opts bson.D, on bool) bson.D {
	out := make(bson.D, 0, len(opts)+1)
	for _, e := range opts {
		if e.Key != PreImagesOption {
			out = append(out, e)
		}
	}
	if on {
		out = append(out, bson.E{Key: PreImagesOption, Value: bson.D{{Key: "enabled", Value: true}}})
	}
	return out
}

// ParsePreImages reads PreImagesOption's value as mongod's IDL does, for
// the command cmd (create or collMod).
func ParsePreImages(cmd string, v any) (bool, error) {
	d, ok := v.(bson.D)
	if !ok {
		return false, mongoerr.WrongType(cmd, PreImagesOption, v, "object")
	}
	on, found := false, false
	for _, e := range d {
		if e.Key != "enabled" {
			return false, mongoerr.Newf(mongoerr.Location40415, "BSON field '%s.%s.%s' is an unknown field.", cmd, PreImagesOption, e.Key)
		}
		b, isBool := e.Value.(bool)
		if !isBool {
			return false, mongoerr.WrongType(cmd, PreImagesOption+".enabled", e.Value, "bool")
		}
		on, found = b, true
	}
	if !found {
		return false, mongoerr.Newf(mongoerr.Location40414, "BSON field '%s.%s.enabled' is missing but a required field", cmd, PreImagesOption)
	}
	return on, nil
}
