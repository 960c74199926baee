// Package touchrepair restores, at open, the dates of documents whose
// touches the storage engine held back with their TTL entry as their
// only log (docs/design/0002, "The TTL entry as the touch's log"): the
// engine's storage.TouchRepair, given docstore's appending TTL indexes.
package touchrepair

import (
	"encoding/binary"
	"errors"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// Index is an appending TTL index whose entries may log touches.
type Index struct {
	Prefix, End []byte                         // its entries' keys
	Field       string                         // the top-level date it reads
	Desc        bool                           // its keys hold dates descending
	Date        func(key []byte) (int64, bool) // an entry key's date
	DocKey      func(id []byte) []byte         // a document's key by encoded _id
}

// Run sets, through set, the date of each document of each index whose
// newest entry there logs a touch later than the document's date to
// that entry's date. A document's newest entry is its current date's
// (docstore keeps that so), so such an entry is a touch storage lacks.
func Run(r storage.Reader, indexes []Index, set func(key, value []byte) error) error {
	for _, ix := range indexes {
		if err := repairIndex(r, ix, set); err != nil {
			return err
		}
	}
	return nil
}

func repairIndex(r storage.Reader, ix Index, set func(key, value []byte) error) error {
	logged, err := loggedTouches(r, ix)
	if err != nil {
		return err
	}
	for id, date := range logged {
		key := ix.DocKey([]byte(id))
		raw, err := r.Get(key)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		at, ok := bsonutil.DateOffset(raw, ix.Field)
		if !ok || int64(binary.LittleEndian.Uint64(raw[at:])) >= date {
			continue
		}
		binary.LittleEndian.PutUint64(raw[at:], uint64(date))
		if err := set(key, raw); err != nil {
			return err
		}
	}
	return nil
}

// loggedTouches returns the date each document's newest entry in ix
// logs, by encoded _id, for the documents whose newest entry logs.
func loggedTouches(r storage.Reader, ix Index) (map[string]int64, error) {
	it, err := r.NewIter(ix.Prefix, ix.End)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	type newest struct {
		date int64
		logs bool
	}
	seen := map[string]newest{} // documents with an entry that logs
	first, next := it.First, it.Next
	if ix.Desc {
		first, next = it.Last, it.Prev // dates ascending
	}
	for ok := first(); ok; ok = next() {
		date, dated := ix.Date(it.Key())
		if !dated {
			continue
		}
		id, logs := ttlentry.ID(it.Key(), it.Value()), ttlentry.LogsTouch(it.Value())
		if _, ok := seen[string(id)]; ok || logs {
			seen[string(id)] = newest{date, logs}
		}
	}
	logged := map[string]int64{}
	for id, e := range seen {
		if e.logs {
			logged[id] = e.date
		}
	}
	return logged, it.Error()
}
