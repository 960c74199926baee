package docstore

import "go.mongodb.org/mongo-driver/v2/bson"

// SetOptions replaces the collection's options (as listCollections shows
// them) in a write of its own, with no event; collMod uses Edit.
func (c *Collection) SetOptions(opts bson.D) error {
	e := c.Edit()
	e.SetOptions(opts)
	return e.Commit(nil)
}
