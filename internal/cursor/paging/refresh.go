package paging

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/executor"
	"github.com/mayflydb/mayfly/internal/repl"
)

// Refreshing passes on the documents a read returns to its client,
// refreshing their refreshOnRead dates (docstore.RefreshOnRead) as it
// goes. It sits below any projection, so it sees each document whole.
func Refreshing(c *docstore.Collection, src cursor.Source) cursor.Source {
	return &refreshSource{src: src, c: c}
}

type refreshSource struct {
	src cursor.Source
	c   *docstore.Collection
}

func (s *refreshSource) Next() (bson.D, bool, error) {
	d, ok, err := s.src.Next()
	if !ok || err != nil {
		return d, ok, err
	}
	out, err := refresh(s.c, d)
	return out, err == nil, err
}

func (s *refreshSource) Close() error { return s.src.Close() }

// RefreshThen refreshes each document whole before project reshapes it:
// a find's projection step on a collection whose reads refresh.
func RefreshThen(c *docstore.Collection, project func(bson.D) (bson.D, error)) func(bson.D) (bson.D, error) {
	return func(d bson.D) (bson.D, error) {
		out, err := refresh(c, d)
		if err != nil {
			return nil, err
		}
		return project(out)
	}
}

// refresh refreshes d's refreshOnRead dates. A member stepped down since
// the read began returns the document as it read it: the new primary's
// reads refresh.
func refresh(c *docstore.Collection, d bson.D) (bson.D, error) {
	out, err := c.RefreshOnRead(d)
	if errors.Is(err, repl.ErrNotPrimary) {
		return d, nil
	}
	return out, err
}

// documentStages are the stages that pass documents on one by one (each
// output is an input document, reshaped or not).
var documentStages = map[string]bool{
	"$match": true, "$sort": true, "$skip": true, "$limit": true, "$project": true,
	"$addFields": true, "$set": true, "$unset": true, "$replaceRoot": true,
	"$replaceWith": true, "$redact": true, "$lookup": true, "$unwind": true,
}

// ReturnsDocuments reports whether a pipeline returns its collection's
// documents to the client, so that they refresh: its first stage is a
// $match and every stage is one of documentStages. A pipeline that
// groups or counts ($group, $count: the drivers' countDocuments) returns
// no document to the client.
func ReturnsDocuments(stages bson.A) bool {
	if len(stages) == 0 || executor.FirstKey(stages[0]) != "$match" {
		return false
	}
	for _, st := range stages {
		if !documentStages[executor.FirstKey(st)] {
			return false
		}
	}
	return true
}
