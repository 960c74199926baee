package update

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// matcher is a compiled query filter.
type matcher interface {
	Match(doc bson.D) bool
}
