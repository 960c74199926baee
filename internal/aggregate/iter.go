package aggregate

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// sliceIter streams documents held in memory.
type sliceIter struct {
	docs []bson.D
	i    int
}

func (s *sliceIter) Next() (bson.D, bool, error) {
	if s.i >= len(s.docs) {
		return nil, false, nil
	}
	s.i++
	return s.docs[s.i-1], true, nil
}

func (s *sliceIter) Close() error { s.docs = nil; return nil }

// mapIter applies f to each upstream document; f returns the documents to
// emit for it (none, one or several) or an error. name labels errors.
type mapIter struct {
	in      Iterator
	f       func(bson.D) ([]bson.D, error)
	pending []bson.D
	name    string
}

func (m *mapIter) Next() (bson.D, bool, error) {
	for len(m.pending) == 0 {
		doc, ok, err := m.in.Next()
		if err != nil || !ok {
			return nil, false, err
		}
		if m.pending, err = m.f(doc); err != nil {
			return nil, false, fmt.Errorf("%s stage: %w", m.name, err)
		}
	}
	doc := m.pending[0]
	m.pending = m.pending[1:]
	return doc, true, nil
}

func (m *mapIter) Close() error { return m.in.Close() }

// oneToOne adapts a per-document transform to mapIter's shape.
func oneToOne(f func(bson.D) (bson.D, error)) func(bson.D) ([]bson.D, error) {
	return func(d bson.D) ([]bson.D, error) {
		out, err := f(d)
		if err != nil {
			return nil, err
		}
		return []bson.D{out}, nil
	}
}

// drain reads all of in into memory, closing it, and fails with MongoDB's
// memory error when the documents exceed the stage's limit.
func drain(in Iterator, rc *runCtx, what string) ([]bson.D, error) {
	defer in.Close()
	var docs []bson.D
	var mem memTracker
	for {
		doc, ok, err := in.Next()
		if err != nil || !ok {
			return docs, err
		}
		if err := mem.add(approxSize(doc), rc, what); err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
}

// memTracker counts the bytes a blocking stage holds.
type memTracker struct{ used int64 }

// add charges n bytes; past the limit without allowDiskUse it fails with
// the message of the stage kind (what is "$sort" or "$group"-like).
func (m *memTracker) add(n int64, rc *runCtx, what string) error {
	m.used += n
	if rc.opt.AllowDiskUse || m.used <= rc.opt.memoryLimit() {
		return nil
	}
	return memoryError(what, rc.opt.memoryLimit())
}
