package paging

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cursor"
)

// Slice serves documents already in memory; a cursor over them closes
// with the batch that returns the last one.
func Slice(docs ...bson.D) cursor.Source { return &sliceSource{docs: docs} }

type sliceSource struct {
	docs []bson.D
	i    int
}

func (s *sliceSource) Next() (bson.D, bool, error) {
	if s.i >= len(s.docs) {
		return nil, false, nil
	}
	s.i++
	return s.docs[s.i-1], true, nil
}

func (s *sliceSource) Close() error { return nil }

func (s *sliceSource) exhausted() bool { return s.i >= len(s.docs) }

// Limit is find's source under a limit: once it has returned limit
// documents it knows it has ended, as mongod's LIMIT stage does.
func Limit(src cursor.Source, limit int64) cursor.Source {
	return &limitedSource{Source: src, left: limit}
}

type limitedSource struct {
	cursor.Source
	left int64
}

func (l *limitedSource) Next() (bson.D, bool, error) {
	if l.left <= 0 {
		return nil, false, nil
	}
	d, ok, err := l.Source.Next()
	if ok {
		l.left--
	}
	return d, ok, err
}

func (l *limitedSource) exhausted() bool { return l.left <= 0 }

// Project reshapes each document of src with project: a tailable
// cursor's projection, which stays tailable.
func Project(src cursor.Source, project func(bson.D) (bson.D, error)) cursor.Source {
	return &projectSource{src: src, project: project}
}

type projectSource struct {
	src     cursor.Source
	project func(bson.D) (bson.D, error)
}

func (s *projectSource) Next() (bson.D, bool, error) {
	d, ok, err := s.src.Next()
	if !ok || err != nil {
		return nil, ok, err
	}
	out, err := s.project(d)
	return out, err == nil, err
}

func (s *projectSource) Close() error { return s.src.Close() }

// Interruptible stops src with check's error once check fails (the
// command's maxTimeMS or killOp), so blocking stages that drain their
// input stop too.
func Interruptible(src cursor.Source, check func() error) cursor.Source {
	return &interruptible{src: src, check: check}
}

type interruptible struct {
	src   cursor.Source
	check func() error
}

func (s *interruptible) Next() (bson.D, bool, error) {
	if err := s.check(); err != nil {
		return nil, false, err
	}
	return s.src.Next()
}

func (s *interruptible) Close() error { return s.src.Close() }
