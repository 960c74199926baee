package docstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/storage"
)

// ErrCollectionDropped is returned by a scan whose collection was dropped
// between the commands that read it (a cursor's getMore).
var ErrCollectionDropped = errors.New("docstore: collection dropped")

// DroppedError carries the dropped collection's UUID for the client's
// message.
type DroppedError struct{ UUID bson.Binary }

func (e *DroppedError) Error() string { return ErrCollectionDropped.Error() }

// Unwrap lets errors.Is find ErrCollectionDropped.
func (e *DroppedError) Unwrap() error { return ErrCollectionDropped }

// Refresh prepares a scan to go on in a later command (a cursor's
// getMore): it takes that command's context, fails if the collection was
// dropped, re-reads the clock for expiry, and reopens its storage
// iterator at the same position so that documents deleted, changed or
// expired since are seen as they are now, not as they were when the scan
// began. It reports whether the last document it yielded is still there,
// unexpired and matching (true after the scan's end, when nothing is
// pending from it).
func (d *DocIter) Refresh(ctx context.Context) (lastLive bool, err error) {
	d.ctx = ctx
	if d.err != nil {
		return false, d.err
	}
	if d.c.dropped.Load() {
		d.err = fmt.Errorf("docstore: scan: %w", &DroppedError{UUID: d.c.meta().UUID})
		return false, d.err
	}
	d.now = d.c.store.clock.Now()
	if d.it != nil && d.it.Valid() {
		d.reopen()
	}
	if d.err != nil {
		return false, d.err
	}
	return d.lastStillLive(), d.err
}

// reopen replaces the iterator by a fresh one standing on the same key, or
// on the next one in scan order if that key is gone.
func (d *DocIter) reopen() {
	if err := d.it.Error(); err != nil {
		d.err = fmt.Errorf("docstore: scan: %w", err)
		return
	}
	key := append([]byte(nil), d.it.Key()...)
	_ = d.it.Close()
	d.it = nil
	it, err := d.c.store.eng.NewIter(d.lo, d.hi)
	if err != nil {
		d.err = fmt.Errorf("docstore: reopen scan: %w", err)
		return
	}
	d.it = it
	var ok bool
	if d.plan.Reverse {
		ok = it.SeekLT(append(key, 0))
	} else {
		ok = it.SeekGE(key)
	}
	d.unconsumed = !ok || !bytes.Equal(it.Key(), key)
}

func (d *DocIter) noteYielded(doc bson.D) {
	id, ok := lookupID(doc)
	if !ok {
		d.lastID = nil
		return
	}
	d.lastID = keyenc.AppendValue(d.lastID[:0], id)
}

func (d *DocIter) lastStillLive() bool {
	if d.lastID == nil {
		return true
	}
	raw, err := d.c.store.eng.Get(docKey(d.c.meta().ID, d.lastID))
	if errors.Is(err, storage.ErrNotFound) {
		return false
	}
	if err != nil {
		d.err = fmt.Errorf("docstore: fetch document: %w", err)
		return false
	}
	_, keep := d.accept(raw)
	d.Stats.DocsExamined--
	return keep
}
