package update

import (
	"github.com/mayflydb/mayfly/internal/query"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// matcher is a compiled query filter.
type matcher interface {
	Match(doc bson.D) bool
}

// compileFilter compiles a query with the query package, so $pull
// conditions and array filters mean exactly what they mean in find.
func compileFilter(d bson.D) (matcher, error) {
	f, err := query.NewFilter(d)
	if err != nil {
		return nil, err
	}
	return f, nil
}
