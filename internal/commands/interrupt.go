package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cursor"
)

// interruptible stops a source once the command's context ends (maxTimeMS
// or shutdown), so blocking stages that drain their input stop too.
type interruptible struct {
	ctx context.Context
	src cursor.Source
}

func (s *interruptible) Next() (bson.D, bool, error) {
	if err := checkInterrupt(s.ctx); err != nil {
		return nil, false, err
	}
	return s.src.Next()
}

func (s *interruptible) Close() error { return s.src.Close() }
