package docstore

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/timeseries"
	"github.com/mayflydb/mayfly/internal/validator"
)

// The rules of a collection hold for every document the write path stores,
// whichever command writes it: an insert, an update or replacement, an
// upsert, findAndModify, applyOps, $merge and $out all come through
// prepareStored (new documents) or checkedChange (replacements). They are
// the collection's schema validator (skipped only by a write that carries
// BypassValidation), a time-series collection's timeField, and the refusal
// of a string _id under a non-simple default collation.

// checkRules refuses doc, about to replace old (nil for a new document),
// when the collection's rules forbid it; st is the collection's state the
// write sees, whose validator was compiled with its catalog version.
func (c *Collection) checkRules(st *collState, doc, old bson.D, opt WriteOptions) error {
	if old == nil {
		if err := collatedIDError(st, doc); err != nil {
			return err
		}
	}
	if err := timeseries.CheckMeasurement(st.meta, doc); err != nil {
		return err
	}
	if opt.BypassValidation || st.validator == nil {
		return nil
	}
	switch st.validator.Judge(doc, old) {
	case validator.Warn:
		c.store.logger.Warn("Document would fail validation", "namespace", st.meta.Namespace())
	case validator.Refuse:
		return st.validator.Error(doc)
	}
	return nil
}

// checkedChange wraps a Modify callback so that a replacement it asks for
// is checked against the collection's rules first.
func (c *Collection) checkedChange(fn func(doc bson.D) (Change, error), opt WriteOptions) func(doc bson.D) (Change, error) {
	return func(cur bson.D) (Change, error) {
		ch, err := fn(cur)
		if err != nil || ch.Kind != Replace {
			return ch, err
		}
		if err := c.checkRules(c.state.Load(), ch.Doc, cur, opt); err != nil {
			return Change{}, err
		}
		return ch, nil
	}
}

// collatedIDError refuses a new document whose _id holds a string in a
// collection with a non-simple default collation: mongod's _id index
// would then be unique under the collation, while Mayfly's is binary.
func collatedIDError(st *collState, doc bson.D) error {
	if _, ok := bsonutil.Field(st.meta.Options, "collation"); !ok {
		return nil
	}
	id, _ := bsonutil.Field(doc, "_id")
	if !bsonutil.HoldsString(id) {
		return nil
	}
	return mongoerr.Newf(mongoerr.BadValue, "an _id holding a string in %s, a collection with a non-simple default collation, is not supported by Mayfly: its _id index is unique in binary order", st.meta.Namespace())
}
