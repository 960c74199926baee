package docstore

import (
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/storage"
)

// ScanStats count the work of a scan, for explain's executionStats.
type ScanStats struct {
	KeysExamined int64
	DocsExamined int64
	Returned     int64
}

// DocIter yields the live documents of a plan that match its filter.
type DocIter struct {
	c      *Collection
	plan   *Plan
	filter *query.Filter
	now    time.Time
	hide   bool // exact expiry in force

	it    storage.Iterator
	next  int // next range or id
	seen  map[string]struct{}
	Stats ScanStats
	err   error
}

// Scan starts an iterator over the documents plan finds that match f
// (nil matches all). Expired documents are skipped under exact expiry.
func (c *Collection) Scan(plan *Plan, f *query.Filter) *DocIter {
	if plan == nil {
		plan = &Plan{Kind: CollScan}
	}
	return &DocIter{
		c: c, plan: plan, filter: f,
		now:  c.store.clock.Now(),
		hide: c.store.exactExpiry.Load() && c.HasTTL(),
	}
}

// Next returns the next matching document; ok is false at the end.
func (d *DocIter) Next() (bson.D, bool, error) {
	for d.err == nil {
		raw, ok := d.nextRaw()
		if !ok {
			break
		}
		doc, keep := d.accept(raw)
		if keep {
			d.Stats.Returned++
			return doc, true, nil
		}
	}
	return nil, false, d.err
}

func (d *DocIter) accept(raw []byte) (bson.D, bool) {
	d.Stats.DocsExamined++
	var doc bson.D
	if err := bson.Unmarshal(raw, &doc); err != nil {
		d.err = fmt.Errorf("docstore: decode stored document: %w", err)
		return nil, false
	}
	if d.hide && d.c.Expired(doc, d.now) {
		return nil, false
	}
	if d.filter != nil && !d.filter.Match(doc) {
		return nil, false
	}
	return doc, true
}

func (d *DocIter) nextRaw() ([]byte, bool) {
	switch d.plan.Kind {
	case IDLookup:
		return d.nextID()
	case IndexScan:
		return d.nextIndexed()
	}
	return d.nextCollScan()
}

func (d *DocIter) nextCollScan() ([]byte, bool) {
	if d.it == nil {
		p := docPrefix(d.c.meta().ID)
		if !d.open(p, prefixEnd(p)) {
			return nil, false
		}
		return d.current(d.it.First())
	}
	return d.current(d.it.Next())
}

func (d *DocIter) current(ok bool) ([]byte, bool) {
	if !ok {
		d.err = d.it.Error()
		return nil, false
	}
	return d.it.Value(), true
}

func (d *DocIter) open(lo, hi []byte) bool {
	it, err := d.c.store.eng.NewIter(lo, hi)
	if err != nil {
		d.err = err
		return false
	}
	d.it = it
	return true
}

func (d *DocIter) nextID() ([]byte, bool) {
	for d.next < len(d.plan.ids) {
		id := d.plan.ids[d.next]
		d.next++
		if d.markSeen(id) {
			continue
		}
		d.Stats.KeysExamined++
		if raw, ok := d.get(id); ok {
			return raw, true
		}
		if d.err != nil {
			return nil, false
		}
	}
	return nil, false
}

func (d *DocIter) get(idEnc []byte) ([]byte, bool) {
	raw, err := d.c.store.eng.Get(docKey(d.c.meta().ID, idEnc))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false
	}
	if err != nil {
		d.err = err
		return nil, false
	}
	return raw, true
}

// markSeen records an _id and reports whether it was yielded before: a
// multikey document has several entries in one index.
func (d *DocIter) markSeen(idEnc []byte) bool {
	if d.seen == nil {
		d.seen = map[string]struct{}{}
	}
	if _, ok := d.seen[string(idEnc)]; ok {
		return true
	}
	d.seen[string(idEnc)] = struct{}{}
	return false
}

func (d *DocIter) nextIndexed() ([]byte, bool) {
	for d.err == nil {
		if !d.advanceIndex() {
			return nil, false
		}
		d.Stats.KeysExamined++
		idEnc := d.it.Value()
		if d.markSeen(idEnc) {
			continue
		}
		if raw, ok := d.get(idEnc); ok {
			return raw, true
		}
	}
	return nil, false
}

// advanceIndex moves to the next index entry, opening ranges in turn.
func (d *DocIter) advanceIndex() bool {
	for {
		if d.it != nil {
			if d.it.Next() {
				return true
			}
			if d.err = d.it.Error(); d.err != nil {
				return false
			}
			d.it.Close()
			d.it = nil
		}
		if d.next >= len(d.plan.ranges) {
			return false
		}
		r := d.plan.ranges[d.next]
		d.next++
		if !d.open(r.lo, r.hi) {
			return false
		}
		if d.it.First() {
			return true
		}
	}
}

// Close releases the iterator.
func (d *DocIter) Close() error {
	if d.it != nil {
		err := d.it.Close()
		d.it = nil
		return err
	}
	return nil
}
