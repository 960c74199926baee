package docstore

import (
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// Expiring array elements. A TTL index with expireElements on a path
// through an array of subdocuments ({"items.addedAt": 1}) expires each
// element whose date is past expireAfterSeconds, not the document: reads
// never see such an element (liveElements, applied wherever reads apply
// exact expiry), and the TTL monitor removes it from the stored document
// (ExpiryPass.walkElements), reported to change streams as an update
// marked expiredElements. The index is one of the collection's TTL
// indexes for the monitor (its next expiry, its passes, its progress
// mark), and none for a document's own expiry.

// liveElements returns doc without the array elements that have expired
// at now; doc itself when none has (or the collection expires none).
func (c *Collection) liveElements(doc bson.D, now time.Time) bson.D {
	for _, ix := range c.state.Load().elements {
		if ix.partial != nil && !ix.partial.Match(doc) {
			continue
		}
		if out, changed := ix.dropExpired(doc, strings.Split(ix.def.Fields[0].Path, "."), now); changed {
			doc = out
		}
	}
	return doc
}

// dropExpired walks parts through subdocuments to the first array and
// leaves out its elements whose date at the rest of the path has expired.
// Only documents on the path are copied.
func (ix *indexState) dropExpired(doc bson.D, parts []string, now time.Time) (bson.D, bool) {
	if len(parts) < 2 {
		return doc, false
	}
	for i, e := range doc {
		if e.Key != parts[0] {
			continue
		}
		var next any
		changed := false
		switch v := e.Value.(type) {
		case bson.D:
			next, changed = ix.dropExpired(v, parts[1:], now)
		case bson.A:
			next, changed = ix.keepLive(v, parts[1:], now)
		}
		if !changed {
			return doc, false
		}
		out := append(bson.D(nil), doc...)
		out[i].Value = next
		return out, true
	}
	return doc, false
}

// keepLive returns the elements of arr that have not expired.
func (ix *indexState) keepLive(arr bson.A, rest []string, now time.Time) (bson.A, bool) {
	var out bson.A
	for i, el := range arr {
		sub, isDoc := el.(bson.D)
		d, hasDate := bson.DateTime(0), false
		if isDoc {
			d, hasDate = dateAt(sub, rest)
		}
		expired := hasDate && !ix.expiry(d).After(now)
		if expired && out == nil {
			out = append(make(bson.A, 0, len(arr)), arr[:i]...)
		}
		if !expired && out != nil {
			out = append(out, el)
		}
	}
	if out == nil {
		return arr, false
	}
	return out, true
}

// walkElements is an expireElements index's pass: for each document one
// of whose entries has expired, it writes the document back without its
// expired elements (whose entries go with them), up to limit documents.
func (p *ExpiryPass) walkElements(t *tx, limit int) (res ExpireResult, err error) {
	ix := p.ix
	tc, err := p.openCursor()
	if err != nil {
		return res, err
	}
	defer tc.it.Close()
	seen := map[string]bool{}
	for ; tc.ok; tc.advance() {
		d, ok := p.expiredEntry(tc)
		if !ok {
			break
		}
		id := ttlentry.ID(tc.it.Key(), tc.it.Value())
		if seen[string(id)] {
			continue
		}
		if res.Trimmed == limit {
			res.More = true
			break
		}
		p.after = append(p.after[:0], tc.it.Key()...)
		if !p.takeable(t, id) {
			p.left = min(p.left, int64(d))
			continue
		}
		seen[string(id)] = true
		if err := t.trimElements(ix, append([]byte(nil), id...), p.now); err != nil {
			return res, err
		}
		res.Trimmed++
		res.Expiries = append(res.Expiries, ix.expiry(d).UnixNano())
	}
	return res, tc.it.Error()
}

// trimElements rewrites the document id without its elements expired
// under ix at now, as an update marked expiredElements.
func (t *tx) trimElements(ix *indexState, id []byte, now time.Time) error {
	old, err := t.c.loadLocked(id)
	if err != nil || old == nil {
		return err
	}
	doc, changed := ix.dropExpired(old.doc, strings.Split(ix.def.Fields[0].Path, "."), now)
	if !changed {
		return nil
	}
	raw, err := marshalDoc(doc)
	if err != nil {
		return err
	}
	d := &stored{idEnc: old.idEnc, raw: raw, doc: doc}
	if err := t.putDoc(d, old); err != nil {
		return err
	}
	if t.orphan(old.raw) {
		return nil // its owner reports the change (ownership.go)
	}
	t.elements = &changestream.ElementExpiry{Index: ix.def.Name, AfterSecs: ix.def.ExpireAfter}
	t.emitWrite(d, old, false)
	t.elements = nil
	return nil
}
