package docstore

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/query"
)

// ScanAfter scans, in natural order, the documents after the one with
// _id after (nil: from the start) that match f: what a tailable cursor
// reads each time it looks for new documents. A capped collection's
// natural order is _id order (see capped.go).
func (c *Collection) ScanAfter(after any, hasAfter bool, f *query.Filter) *DocIter {
	st := c.state.Load()
	p := docPrefix(st.meta.ID)
	lo := p
	if hasAfter {
		// No _id encoding is a prefix of another: every key after this
		// one is at or past it followed by a zero byte.
		lo = append(append(append([]byte(nil), p...), keyenc.AppendValue(nil, after)...), 0)
	}
	plan := &Plan{
		Kind: IndexScan, Index: st.indexes[0].def, SortProvided: true, idScan: true,
		ranges: []keyRange{{lo: lo, hi: prefixEnd(p)}},
		bounds: []fieldBounds{{path: "_id", full: true}},
	}
	return c.Scan(plan, f)
}

// DocID is the _id of a document a scan returned.
func DocID(d bson.D) any {
	id, _ := lookupID(d)
	return id
}
