// Package nsname holds MongoDB's rules for database and collection
// names: what a name may hold, how long a namespace may be, and which
// system collections clients may create and write.
package nsname

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

// legalClientSystem reports whether clients may create and write db.coll,
// a system collection (mongod's isLegalClientSystemNS): some belong to a
// database (admin's roles and version, config's sessions, local's replica
// set configuration), the rest may be in any.
func legalClientSystem(db, coll string) bool {
	switch coll {
	case "system.users", "system.js", "system.views":
		return true
	}
	if name, ok := strings.CutPrefix(coll, "system.buckets."); ok {
		return name != "" && !strings.HasPrefix(name, ".") && !strings.Contains(name, "$")
	}
	if strings.HasPrefix(coll, "system.statistics.") {
		return true
	}
	switch db {
	case "admin":
		return coll == "system.roles" || coll == "system.version" || coll == "system.keys" ||
			coll == "system.backup_users" || coll == "system.new_users"
	case "config":
		return coll == "system.sessions" || coll == "system.indexBuilds" ||
			coll == "system.sharding_ddl_coordinators" || strings.Contains(coll, ".system.resharding.")
	case "local":
		return coll == "system.replset" || coll == "system.healthlog" || coll == "system.collections_to_restore"
	}
	return false
}

// ValidateUserWrite applies mongod's rule for client writes of every kind
// (insert, update, delete, findAndModify, index builds, bulkWrite; mongod's
// userAllowedWriteNS): the profiler's and the views' system collections
// are the server's, and so is any other system collection clients have no
// use for.
func ValidateUserWrite(db, coll string) error {
	if coll == "system.profile" || coll == "system.views" {
		return mongoerr.Newf(mongoerr.InvalidNamespace, "cannot write to %s.%s", db, coll)
	}
	return ValidateUserCreate(db, coll)
}

// ValidateUserCreate applies mongod's rule for a collection a client
// creates with create (userAllowedCreateNS): the profiler's collection may
// be created (to size it), the server's other system collections not.
func ValidateUserCreate(db, coll string) error {
	if coll != "system.profile" && strings.HasPrefix(coll, "system.") && !legalClientSystem(db, coll) {
		return mongoerr.Newf(mongoerr.InvalidNamespace, "Invalid system namespace: %s.%s", db, coll)
	}
	return nil
}
