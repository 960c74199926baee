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

// checkDBCaseLocked refuses a new database whose name differs only in case
// from an existing one (mongod's DatabaseDifferCase); s.mu is held.
func (s *Store) checkDBCaseLocked(db string) error {
	if _, ok := s.dbs[db]; ok {
		return nil
	}
	for name := range s.dbs {
		if strings.EqualFold(name, db) {
			return mongoerr.Newf(mongoerr.DatabaseDifferCase, "db already exists with different case already have: [%s] trying to create [%s]", name, db)
		}
	}
	return nil
}

// clientSystemCollections are the system collections clients may write
// to; the others belong to the server.
var clientSystemCollections = map[string]bool{
	"system.js": true, "system.users": true, "system.roles": true, "system.version": true,
	"system.new_users": true, "system.backup_users": true, "system.sessions": true,
}

// ValidateUserWrite applies mongod's rule for client writes that create
// documents: the profiler's and the views' system collections are the
// server's, and so is any other system collection clients have no use for.
func ValidateUserWrite(db, coll string) error {
	switch {
	case coll == "system.profile", coll == "system.views":
		return mongoerr.Newf(mongoerr.InvalidNamespace, "cannot write to %s.%s", db, coll)
	case strings.HasPrefix(coll, "system.") && !clientSystemCollections[coll] && !strings.HasPrefix(coll, "system.buckets."):
		return mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid system namespace: %s.%s", db, coll)
	}
	return nil
}
