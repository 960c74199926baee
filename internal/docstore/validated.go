package docstore

import "go.mongodb.org/mongo-driver/v2/bson"

// validated wraps a Modify callback so that a replacement it asks for is
// checked by validate first (nil: no check).
func validated(fn func(doc bson.D) (Change, error), validate func(doc, old bson.D) error) func(doc bson.D) (Change, error) {
	if validate == nil {
		return fn
	}
	return func(cur bson.D) (Change, error) {
		ch, err := fn(cur)
		if err != nil || ch.Kind != Replace {
			return ch, err
		}
		if err := validate(ch.Doc, cur); err != nil {
			return Change{}, err
		}
		return ch, nil
	}
}
