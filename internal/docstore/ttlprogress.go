package docstore

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyenc"
)

// ttlSeekKey is where a walk of the index's date entries starting at date
// d begins: nil (the earliest entry) for the start of time, and always for
// a descending index, whose walk runs backwards.
func (ix *indexState) ttlSeekKey(d int64) []byte {
	if d == math.MinInt64 || ix.def.Fields[0].Desc {
		return nil
	}
	if ix.clustered {
		// A clustered entry is the date's key itself, which a walk
		// would skip as the entry it stopped at: start just after the
		// last possible key of the millisecond before (dates encode in
		// a fixed width).
		return append(keyenc.AppendValue(append([]byte(nil), ix.prefix...), bson.DateTime(d-1)), 0xFF)
	}
	return keyenc.AppendValue(append([]byte(nil), ix.prefix...), bson.DateTime(d))
}

// announceTTLDates tells the progress of each TTL index (ttlmark) the earliest date
// of the entries a committed write added to it.
func (t *tx) announceTTLDates() {
	for i, d := range t.ttlAdded {
		if d != math.MaxInt64 {
			t.st.ttl[i].progress.Announce(d)
		}
	}
}

// noteTTLEntry records, before commit, an entry added to index ix.
func (t *tx) noteTTLEntry(ix *indexState, key []byte) {
	if ix.progress == nil {
		return
	}
	d, ok := ix.keyDate(key)
	if !ok {
		return
	}
	if t.ttlAdded == nil {
		t.ttlAdded = t.ttlAddedBuf[:0]
		if len(t.st.ttl) > len(t.ttlAddedBuf) {
			t.ttlAdded = make([]int64, 0, len(t.st.ttl))
		}
		t.ttlAdded = t.ttlAdded[:len(t.st.ttl)]
		for i := range t.ttlAdded {
			t.ttlAdded[i] = math.MaxInt64
		}
	}
	for i, tix := range t.st.ttl {
		if tix == ix {
			t.ttlAdded[i] = min(t.ttlAdded[i], int64(d))
		}
	}
}
