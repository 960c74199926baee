package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/executor"
	"github.com/mayflydb/mayfly/internal/query"
)

// parseCollation reads the collation option of a command or a statement:
// nil for none or {locale: "simple"}.
func parseCollation(d bson.D) (*collation.Collation, error) {
	v, _ := bsonutil.Field(d, "collation")
	return collation.Parse(v)
}

// collator is c as the query layer takes it (a nil interface for none).
func collator(c *collation.Collation) query.Collator { return executor.Collator(c) }

// collatedSort is s comparing strings under c.
func collatedSort(s *query.Sort, c *collation.Collation) *query.Sort {
	if s == nil || c == nil {
		return s
	}
	return s.WithCollation(c)
}

// commandFilter parses a command's filter with its let variables (nil:
// none) and collation.
func commandFilter(d bson.D, let *letScope, c *collation.Collation) (*query.Filter, error) {
	var vars map[string]any
	if let != nil {
		vars = let.varsFor(d)
	}
	return executor.Filter(d, vars, c)
}

// A collection or view may have a default collation (create's collation
// option, kept in its options as the full spec). Commands on it that give
// no collation of their own use it, as mongod does; one that gives
// {locale: "simple"} compares in binary order.

// defaultCollation is db.coll's default collation, nil for simple or when
// there is no such collection.
func (h *Handler) defaultCollation(db, coll string) *collation.Collation {
	c := h.deps.Store.Collection(db, coll)
	if c == nil {
		return nil
	}
	v, ok := bsonutil.Field(c.Meta().Options, "collation")
	if !ok {
		return nil
	}
	out, err := collation.Parse(v)
	if err != nil {
		return nil // a stored spec was validated when it was stored
	}
	return out
}

// collationIn is the collation a command (or statement) d on db.coll
// uses: its own when it gives one, else the collection's default.
func (h *Handler) collationIn(d bson.D, db, coll string) (*collation.Collation, error) {
	if _, ok := bsonutil.Field(d, "collation"); ok {
		return parseCollation(d)
	}
	return h.defaultCollation(db, coll), nil
}

// requestCollation is collationIn for a command whose first field names
// its collection.
func (h *Handler) requestCollation(r *request) (*collation.Collation, error) {
	name, _ := r.body[0].Value.(string)
	return h.collationIn(r.body, r.db, name)
}

// statementCollation is a write statement's collation: its own, else the
// collection's default dflt.
func statementCollation(s bson.D, dflt *collation.Collation) (*collation.Collation, error) {
	if _, ok := bsonutil.Field(s, "collation"); ok {
		return parseCollation(s)
	}
	return dflt, nil
}
