package docstore

import (
	"strings"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// ValidateNamespace applies MongoDB's rules for database and collection
// names.
func ValidateNamespace(db, coll string) error {
	if err := ValidateDBName(db); err != nil {
		return err
	}
	switch {
	case coll == "":
		return mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid namespace specified '%s.'", db)
	case strings.ContainsRune(coll, 0):
		return mongoerr.Newf(mongoerr.InvalidNamespace, "namespaces cannot have embedded null characters")
	case strings.HasPrefix(coll, "."), strings.Contains(coll, "$"):
		return mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid collection name: %s", coll)
	case len(db)+1+len(coll) > 255:
		return mongoerr.Newf(mongoerr.InvalidNamespace, "Fully qualified namespace is too long. Namespace: %s.%s Max: 255", db, coll)
	}
	return nil
}

// ValidateDBName applies MongoDB's rules for database names.
func ValidateDBName(db string) error {
	if db == "" {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid empty database name")
	}
	if len(db) >= 64 {
		return mongoerr.Newf(mongoerr.InvalidNamespace, "db name is too long: %s", db)
	}
	if strings.ContainsAny(db, "/\\. \"$\x00") {
		return mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid database name: '%s'", db)
	}
	return nil
}
