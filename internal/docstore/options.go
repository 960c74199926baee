package docstore

import "go.mongodb.org/mongo-driver/v2/bson"

// SetOptions replaces the collection's options (as listCollections shows
// them), for collMod.
func (c *Collection) SetOptions(opts bson.D) error {
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	next := c.meta().Clone()
	next.Options = opts
	return c.saveMeta(next)
}
