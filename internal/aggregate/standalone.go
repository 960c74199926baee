package aggregate

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Docs streams docs, held in memory.
func Docs(docs ...bson.D) Iterator { return &sliceIter{docs: docs} }

// Standalone is the Env of a pipeline that reads no collection (a
// pipeline-style update, $documents, currentOp's): now is its $$NOW, and
// g ends it with its operation (nil: it runs to its end).
func Standalone(now time.Time, g *expr.Guard) Env { return standaloneEnv{now: now, guard: g} }

type standaloneEnv struct {
	now   time.Time
	guard *expr.Guard
}

func (e standaloneEnv) Guard() *expr.Guard { return e.guard }

func (e standaloneEnv) Collection(string) (Iterator, error) {
	return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "this pipeline cannot read other collections")
}

func (e standaloneEnv) CollStats(bson.D) (bson.D, error) {
	return nil, mongoerr.New(mongoerr.Location40415, "$collStats is not allowed here")
}

func (e standaloneEnv) Now() time.Time { return e.now }
