package docstore

import (
	"strings"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

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
