package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/query"
)

// Merger combines the results of one query from several shards into one
// stream, in sort's order when sort is set. The router applies skip,
// limit and projection after it. internal/shardmerge's merge sort is
// meant to take this place; ConcatMerger is the router's own.
type Merger interface {
	Merge(streams []aggregate.Iterator, sort *query.Sort) aggregate.Iterator
}

// ConcatMerger concatenates the shards' streams; with a sort it reads
// them all and sorts on the router.
type ConcatMerger struct{}

// Merge implements Merger.
func (ConcatMerger) Merge(streams []aggregate.Iterator, sort *query.Sort) aggregate.Iterator {
	cat := &concatIter{streams: streams}
	if sort == nil || sort.IsEmpty() {
		return cat
	}
	return &sortedIter{in: cat, sort: sort}
}

type concatIter struct {
	streams []aggregate.Iterator
}

func (c *concatIter) Next() (bson.D, bool, error) {
	for len(c.streams) > 0 {
		doc, ok, err := c.streams[0].Next()
		if err != nil || ok {
			return doc, ok, err
		}
		_ = c.streams[0].Close()
		c.streams = c.streams[1:]
	}
	return nil, false, nil
}

func (c *concatIter) Close() error {
	var first error
	for _, s := range c.streams {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.streams = nil
	return first
}

// sortedIter reads all of in on its first Next and returns it sorted.
type sortedIter struct {
	in     aggregate.Iterator
	sort   *query.Sort
	docs   []bson.D
	loaded bool
}

func (s *sortedIter) Next() (bson.D, bool, error) {
	if !s.loaded {
		for {
			doc, ok, err := s.in.Next()
			if err != nil {
				return nil, false, err
			}
			if !ok {
				break
			}
			s.docs = append(s.docs, doc)
		}
		s.loaded = true
		s.sort.Sort(s.docs)
	}
	if len(s.docs) == 0 {
		return nil, false, nil
	}
	doc := s.docs[0]
	s.docs = s.docs[1:]
	return doc, true, nil
}

func (s *sortedIter) Close() error { return s.in.Close() }

// mapIter applies f to each document of in (a projection on the router).
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
