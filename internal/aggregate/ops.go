package aggregate

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/query"
)

// The operators below are the one implementation of skipping, limiting
// and sorting that both pipelines ($skip, $limit, $sort) and find's SKIP,
// LIMIT and SORT stages run on; each caller keeps its own explain and its
// own error messages around them.

// Skip returns in without its first n documents.
func Skip(in Iterator, n int64) Iterator { return &skipIter{in: in, left: n} }

// Limit returns at most n documents of in.
func Limit(in Iterator, n int64) Iterator { return &limitIter{in: in, left: n} }

// SortBuffered reads in whole and returns its documents in the order of
// s (stable). With keep > 0 only the best keep documents are held as it
// reads (a top-k sort), and only they are returned. check is called after
// each document with the bytes held; its error stops the read (memory
// limits, interruption). It also returns the bytes read in all. It does
// not close in.
func SortBuffered(in Iterator, s *query.Sort, keep int64, check func(held int64) error) ([]bson.D, int64, error) {
	var docs []bson.D
	var held, total int64
	for {
		d, ok, err := in.Next()
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			break
		}
		size := int64(approxSize(d))
		docs, held, total = append(docs, d), held+size, total+size
		if keep > 0 && int64(len(docs)) >= 2*keep+16 {
			if docs, held, err = topK(s, docs, keep, check); err != nil {
				return nil, 0, err
			}
		}
		if err := check(held); err != nil {
			return nil, 0, err
		}
	}
	if err := s.SortUntil(docs, func() error { return check(held) }); err != nil {
		return nil, 0, err
	}
	if keep > 0 && int64(len(docs)) > keep {
		docs = docs[:keep]
	}
	return docs, total, nil
}

func topK(s *query.Sort, docs []bson.D, keep int64, check func(held int64) error) ([]bson.D, int64, error) {
	if err := s.SortUntil(docs, func() error { return check(0) }); err != nil {
		return nil, 0, err
	}
	kept := append([]bson.D(nil), docs[:keep]...)
	var held int64
	for _, d := range kept {
		held += int64(approxSize(d))
	}
	return kept, held, nil
}
