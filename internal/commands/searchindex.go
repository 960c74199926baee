package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
)

// cmdSearchIndexes answers the Atlas Search index commands as a mongod
// with no search index management host does: they need mongot.
func cmdSearchIndexes(*Handler, *request) (bson.D, error) {
	return nil, aggregate.SearchIndexesNotEnabled()
}
