package commands

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/repl"
)

// refreshSource passes on the documents a read returns to its client,
// refreshing their refreshOnRead dates (docstore.RefreshOnRead) as it
// goes. It sits below any projection, so it sees each document whole.
type refreshSource struct {
	src cursor.Source
	c   *docstore.Collection
}

func (s *refreshSource) Next() (bson.D, bool, error) {
	d, ok, err := s.src.Next()
	if !ok || err != nil {
		return d, ok, err
	}
	out, err := s.c.RefreshOnRead(d)
	if errors.Is(err, repl.ErrNotPrimary) {
		// Stepped down since the read began: the new primary's reads
		// refresh; this one returns the document as it read it.
		return d, true, nil
	}
	return out, err == nil, err
}

func (s *refreshSource) Close() error { return s.src.Close() }

// refreshThen refreshes each document whole before project reshapes it:
// a find's projection step on a collection whose reads refresh.
func refreshThen(c *docstore.Collection, project func(bson.D) (bson.D, error)) func(bson.D) (bson.D, error) {
	return func(d bson.D) (bson.D, error) {
		out, err := c.RefreshOnRead(d)
		switch {
		case errors.Is(err, repl.ErrNotPrimary):
			out = d // see refreshSource.Next
		case err != nil:
			return nil, err
		}
		return project(out)
	}
}

// refreshesOnRead reports whether reads of c that return documents must
// refresh them: c has a refreshOnRead index and this member takes writes
// (a secondary's reads refresh nothing; only the primary writes).
func (h *Handler) refreshesOnRead(c *docstore.Collection) bool {
	if c == nil || !c.RefreshesOnRead() {
		return false
	}
	return h.deps.Repl == nil || h.deps.Repl.Writable()
}

// refreshing wraps src in a refreshSource when reads of c refresh.
func (h *Handler) refreshing(c *docstore.Collection, src cursor.Source) cursor.Source {
	if !h.refreshesOnRead(c) {
		return src
	}
	return &refreshSource{src: src, c: c}
}

// documentStages are the stages that pass documents on one by one (each
// output is an input document, reshaped or not). An aggregate refreshes
// only when its first stage is a $match and every stage is one of these:
// a pipeline that groups or counts ($group, $count: the drivers'
// countDocuments) returns no document to the client.
var documentStages = map[string]bool{
	"$match": true, "$sort": true, "$skip": true, "$limit": true, "$project": true,
	"$addFields": true, "$set": true, "$unset": true, "$replaceRoot": true,
	"$replaceWith": true, "$redact": true, "$lookup": true, "$unwind": true,
}

// aggregateReturnsDocuments reports whether a pipeline returns its
// collection's documents to the client, so that they refresh.
func aggregateReturnsDocuments(stages bson.A) bool {
	if len(stages) == 0 || firstKey(stages[0]) != "$match" {
		return false
	}
	for _, st := range stages {
		if !documentStages[firstKey(st)] {
			return false
		}
	}
	return true
}
