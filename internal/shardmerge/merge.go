package shardmerge

import (
	"container/heap"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/query"
)

// MergeSorted merges streams that are each sorted by s into one stream
// sorted by s, as mongod's AsyncResultsMerger merge-sorts. Documents with
// equal sort keys come out in stream order, so the result is the stable
// sort of the streams' concatenation. It reads at most one document ahead
// per stream; closing it closes every stream.
func MergeSorted(s *query.Sort, streams []aggregate.Iterator) aggregate.Iterator {
	return &sortedMerge{sort: s, streams: streams}
}

// Concat yields every document of the first stream, then of the second,
// and so on: the merge of unsorted results.
func Concat(streams []aggregate.Iterator) aggregate.Iterator {
	return &concat{streams: streams}
}

type concat struct {
	streams []aggregate.Iterator
	next    int
}

func (c *concat) Next() (bson.D, bool, error) {
	for c.next < len(c.streams) {
		doc, ok, err := c.streams[c.next].Next()
		if err != nil {
			return nil, false, fmt.Errorf("shard stream %d: %w", c.next, err)
		}
		if ok {
			return doc, true, nil
		}
		c.next++
	}
	return nil, false, nil
}

func (c *concat) Close() error { return closeAll(c.streams) }

// sortedMerge is a k-way merge over a heap of each stream's head.
type sortedMerge struct {
	sort    *query.Sort
	streams []aggregate.Iterator
	heads   headHeap
	started bool
}

// head is the next document of stream i, with its sort key.
type head struct {
	doc bson.D
	key []any
	i   int
}

type headHeap struct {
	heads []head
	sort  *query.Sort
}

func (h *headHeap) Len() int { return len(h.heads) }

// Less breaks ties by stream index, which keeps the merge stable.
func (h *headHeap) Less(a, b int) bool {
	if c := h.sort.CompareKeys(h.heads[a].key, h.heads[b].key); c != 0 {
		return c < 0
	}
	return h.heads[a].i < h.heads[b].i
}

func (h *headHeap) Swap(a, b int) { h.heads[a], h.heads[b] = h.heads[b], h.heads[a] }
func (h *headHeap) Push(x any)    { h.heads = append(h.heads, x.(head)) }
func (h *headHeap) Pop() any {
	last := h.heads[len(h.heads)-1]
	h.heads = h.heads[:len(h.heads)-1]
	return last
}

func (m *sortedMerge) Next() (bson.D, bool, error) {
	if !m.started {
		if err := m.fill(); err != nil {
			return nil, false, err
		}
		m.started = true
	}
	if m.heads.Len() == 0 {
		return nil, false, nil
	}
	top := m.heads.heads[0]
	doc, ok, err := m.streams[top.i].Next()
	if err != nil {
		return nil, false, fmt.Errorf("shard stream %d: %w", top.i, err)
	}
	if ok {
		m.heads.heads[0].doc, m.heads.heads[0].key = doc, m.sort.Keys(doc)
		heap.Fix(&m.heads, 0)
	} else {
		heap.Pop(&m.heads)
	}
	return top.doc, true, nil
}

// fill reads the first document of every stream.
func (m *sortedMerge) fill() error {
	m.heads = headHeap{sort: m.sort, heads: make([]head, 0, len(m.streams))}
	for i, s := range m.streams {
		doc, ok, err := s.Next()
		if err != nil {
			return fmt.Errorf("shard stream %d: %w", i, err)
		}
		if ok {
			m.heads.heads = append(m.heads.heads, head{doc: doc, key: m.sort.Keys(doc), i: i})
		}
	}
	heap.Init(&m.heads)
	return nil
}

func (m *sortedMerge) Close() error { return closeAll(m.streams) }

func closeAll(streams []aggregate.Iterator) error {
	var errs []error
	for _, s := range streams {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
