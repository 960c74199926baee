package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/query"
)

// parseCollation reads the collation option of a command or a statement:
// nil for none or {locale: "simple"}.
func parseCollation(d bson.D) (*collation.Collation, error) {
	v, _ := lookup(d, "collation")
	return collation.Parse(v)
}

// collator is c as the query layer takes it (a nil interface for none).
func collator(c *collation.Collation) query.Collator {
	if c == nil {
		return nil
	}
	return c
}

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
		vars = let.vars
	}
	return query.NewFilterWith(d, query.FilterOptions{Vars: vars, Collation: collator(c)})
}
