package docstore

import (
	"bytes"
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// IndexDuplicates lists, for each key the named index holds for more
// than one live document, those documents' _ids in index order: what
// collMod reports (violations) when it cannot make the index unique.
// An expired document holds no key, as it is gone for every reader.
func (e *CatalogEdit) IndexDuplicates(ctx context.Context, name string) ([]bson.A, error) {
	var ix *indexState
	for _, s := range e.c.state.Load().indexes {
		if s.def.Name == name {
			ix = s
		}
	}
	if ix == nil {
		return nil, fmt.Errorf("docstore: duplicates: no index %s", name)
	}
	return e.c.indexDuplicates(ctx, ix)
}

func (c *Collection) indexDuplicates(ctx context.Context, ix *indexState) ([]bson.A, error) {
	it, err := c.store.eng.NewIter(ix.prefix, prefixEnd(ix.prefix))
	if err != nil {
		return nil, fmt.Errorf("docstore: duplicates: %w", err)
	}
	defer it.Close()
	var groups []bson.A
	var prev []byte
	var run [][]byte // the _ids of the entries with key prev
	for ok := it.First(); ok; ok = it.Next() {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("docstore: duplicates: %w", err)
		}
		// A touch's stale entry is not its document's key (ttlloose.go).
		if stale, err := c.skipLoose(ix, it.Key(), it.Value(), c.store.eng); err != nil || stale {
			if err != nil {
				return nil, err
			}
			continue
		}
		idEnc := ttlentry.ID(it.Key(), it.Value())
		part := it.Key()[len(ix.prefix) : len(it.Key())-len(idEnc)]
		if !bytes.Equal(part, prev) {
			if groups, err = c.addDuplicates(groups, run); err != nil {
				return nil, err
			}
			prev, run = append(prev[:0], part...), run[:0]
		}
		run = append(run, append([]byte(nil), idEnc...))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("docstore: duplicates: %w", err)
	}
	return c.addDuplicates(groups, run)
}

// addDuplicates adds the live documents of one key's entries to groups
// when there are two or more.
func (c *Collection) addDuplicates(groups []bson.A, run [][]byte) ([]bson.A, error) {
	if len(run) < 2 {
		return groups, nil
	}
	var ids bson.A
	for _, idEnc := range run {
		d, err := c.loadFrom(c.store.eng, idEnc)
		if err != nil {
			return nil, err
		}
		if d != nil && !c.expiredNow(d.doc) {
			ids = append(ids, decodeID(idEnc))
		}
	}
	if len(ids) < 2 {
		return groups, nil
	}
	return append(groups, ids), nil
}
