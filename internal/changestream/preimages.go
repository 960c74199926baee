package changestream

import "go.mongodb.org/mongo-driver/v2/bson"

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
