package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
)

// mapIter applies f to each document of in (a shard's name on its
// $collStats answer).
type mapIter struct {
	in aggregate.Iterator
	f  func(bson.D) (bson.D, error)
}

func (m *mapIter) Next() (bson.D, bool, error) {
	doc, ok, err := m.in.Next()
	if err != nil || !ok {
		return nil, ok, err
	}
	out, err := m.f(doc)
	return out, err == nil, err
}

func (m *mapIter) Close() error { return m.in.Close() }
