package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

const (
	defaultBatchSize = 101
	// maxBatchBytes keeps a reply under the 16 MiB document limit, with room
	// for the reply envelope.
	maxBatchBytes = 16*1024*1024 - 16*1024
)

// peekSource holds a cursor's source and the document a batch read but
// could not send (the reply was full).
type peekSource struct {
	src     cursor.Source
	pending bson.D
	has     bool
	done    bool
	// lsid is the session the cursor was opened in (nil: none); scans are
	// reopened before each getMore (cursor_live.go).
	lsid   []byte
	scans  []*docstore.DocIter
	sorted []*unexpiredSource
	live   *swapCtx
}

func (p *peekSource) Next() (bson.D, bool, error) {
	if p.has {
		p.has = false
		return p.pending, true, nil
	}
	if p.done {
		return nil, false, nil
	}
	d, ok, err := p.src.Next()
	if !ok || err != nil {
		p.done = true
	}
	return d, ok, err
}

// open reports whether the cursor stays open after a batch, as on mongod:
// it closes once its source has ended, and a batch that stopped at its
// count leaves it open unless the source knows it is at its end without
// reading on (documents served from memory, a find's limit reached). A
// scan learns that it has ended only on the next getMore, which then
// answers an empty batch and id 0.
func (p *peekSource) open() bool {
	if p.has {
		return true
	}
	if p.done {
		return false
	}
	ends, ok := p.src.(interface{ exhausted() bool })
	return !ok || !ends.exhausted()
}

func (p *peekSource) Close() error { return p.src.Close() }

// fillBatch reads up to n documents (n < 0: no count limit) that fit in a
// reply; n == 0 gives an empty batch (find's batchSize: 0 opens a cursor).
func fillBatch(src *peekSource, n int64) (bson.A, error) {
	batch := bson.A{}
	size := 0
	for n < 0 || int64(len(batch)) < n {
		d, ok, err := src.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		raw, err := encodeResult(d)
		if err != nil {
			return nil, err
		}
		if len(batch) > 0 && size+len(raw) > maxBatchBytes {
			src.pending, src.has = d, true
			break
		}
		size += len(raw)
		batch = append(batch, bson.Raw(raw))
	}
	return batch, nil
}

// requestCursorReply answers a cursor-producing command: it sends the
// first batch and registers the rest, unless it is exhausted or
// singleBatch was asked; the cursor is bound to r's session and scans (r
// nil: neither).
func (h *Handler) requestCursorReply(r *request, ns string, src cursor.Source, batchSize int64, singleBatch bool) (bson.D, error) {
	p := &peekSource{src: src}
	if r != nil {
		attachRequest(r, p)
	}
	batch, err := fillBatch(p, batchSize)
	if err != nil {
		_ = p.Close()
		return nil, err
	}
	id := int64(0)
	if (p.open() || tailableOf(p) != nil) && !singleBatch {
		id = h.deps.Cursors.Add(ns, p, 0, int64(len(batch))).ID
		for _, s := range p.scans {
			s.Lean()
		}
	} else {
		_ = p.Close()
	}
	return cursorDoc(id, ns, "firstBatch", batch), nil
}

func cursorDoc(id int64, ns, key string, batch bson.A) bson.D {
	return bson.D{{Key: "cursor", Value: bson.D{
		{Key: "id", Value: id},
		{Key: "ns", Value: ns},
		{Key: key, Value: batch},
	}}}
}

// sliceSource serves documents already in memory.
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

// limitedSource is find's source under a limit: once it has returned
// limit documents it knows it has ended, as mongod's LIMIT stage does.
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

// batchSizeArg reads cursor.batchSize (aggregate) or batchSize (find).
func batchSizeArg(r *request, v any, field string) (int64, error) {
	if v == nil {
		return defaultBatchSize, nil
	}
	n, err := toInt64(r.name, field, v)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, mongoerr.Newf(mongoerr.Location51024, "BSON field 'batchSize' value must be >= 0, actual value '%d'", n)
	}
	return n, nil
}
