package docstore

import (
	"encoding/binary"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

// The resident cache's rules for the docstore's keys (storage/rescache
// holds bytes; the engine keeps it exact on every commit, replicated
// applies included). Documents are kept, with their expiry so that one
// leaves the cache when it expires; an index's entries for one value are
// kept as an equality range. The catalog's keys reset it: expiries and
// index layouts are read from the catalog. Reads still apply exact expiry
// to whatever the cache returns (DocIter.accept, Modify).

// residentPolicy is the policy the store gives its engine's cache.
func (s *Store) residentPolicy() rescache.Policy {
	return rescache.Policy{
		Admit:       isDocKey,
		Family:      s.entryFamily,
		ExpiresAt:   s.residentExpiry,
		EqualityLen: s.equalityLen,
		Resets:      definesCatalog,
		// An index's entries begin with a tag, the collection and the
		// index ID.
		RangeGroupLen:   collIDKeyLen + 4,
		RangeKey:        isIndexKey,
		PendingGroupLen: collIDKeyLen, // a collection's documents
	}
}

func isIndexKey(key []byte) bool { return len(key) >= collIDKeyLen+4 && key[0] == tagIndex }

// collIDKeyLen is a tag byte and a collection ID.
const collIDKeyLen = 9

func isDocKey(key []byte) bool { return len(key) > collIDKeyLen && key[0] == tagDocument }

func definesCatalog(key []byte) bool {
	return len(key) > 0 && (key[0] == tagCatalog || key[0] == tagNextID)
}

func (s *Store) collectionOfKey(key []byte) *Collection {
	if len(key) < collIDKeyLen {
		return nil
	}
	return s.collectionByID(binary.BigEndian.Uint64(key[1:collIDKeyLen]))
}

// residentExpiry is when the stored document raw expires by its
// collection's TTL rules.
func (s *Store) residentExpiry(key, raw []byte) (int64, bool) {
	if !isDocKey(key) {
		return s.entryExpiry(key)
	}
	c := s.collectionOfKey(key)
	if c == nil || !c.HasTTL() {
		return 0, false
	}
	if at, ok, done := c.rawExpiresAt(raw); done {
		return at, ok
	}
	doc, err := bsonutil.DecodeD(raw, 0)
	if err != nil {
		return 0, false
	}
	at, ok := c.ExpiresAt(doc)
	return at.UnixNano(), ok
}

// rawExpiresAt reads the expiry from raw BSON when every TTL index is
// simple and on one document-level date; done is false otherwise.
func (c *Collection) rawExpiresAt(raw []byte) (at int64, ok, done bool) {
	var earliest time.Time
	for _, ix := range c.state.Load().ttl {
		if !ix.simple || ix.def.ExpireElements {
			return 0, false, false
		}
		v, found, scalar, err := bsonutil.LookupScalar(raw, ix.def.Fields[0].Path)
		if err != nil || (found && !scalar) {
			return 0, false, false
		}
		d, isDate := v.(bson.DateTime)
		if !isDate {
			continue
		}
		if t := ix.expiry(d); !ok || t.Before(earliest) {
			earliest, ok = t, true
		}
	}
	return earliest.UnixNano(), ok, true
}

// entryFamily places the date in a document's entry in an index that
// touches append to (ttlloose.go): the cache holds the entry under the
// index prefix and the _id, the date left out. A touch reads the entry
// the previous one wrote, and no one reads the older ones by key, so
// the cache keeps one entry per document, which each touch replaces.
func (s *Store) entryFamily(key []byte) (cut, resume int, ok bool) {
	ix := s.indexOfKey(key)
	if ix == nil || !appendsEntries(ix) {
		return 0, 0, false
	}
	n, ok := valuesLen(key, len(ix.prefix), ix.desc)
	return len(ix.prefix), n, ok
}

// entryExpiry is when a TTL index's entry is due: the instant the
// document it was written for expires, if the date is still its own.
func (s *Store) entryExpiry(key []byte) (int64, bool) {
	ix := s.indexOfKey(key)
	if ix == nil || !ix.def.TTL {
		return 0, false
	}
	n, ok := valuesLen(key, len(ix.prefix), ix.desc)
	if !ok {
		return 0, false
	}
	d, ok := ix.keyDate(key[len(ix.prefix):n])
	if !ok {
		return 0, false
	}
	return ix.expiry(d).UnixNano(), true
}

// indexOfKey is the index an index entry key belongs to, or nil.
func (s *Store) indexOfKey(key []byte) *indexState {
	if !isIndexKey(key) {
		return nil
	}
	c := s.collectionOfKey(key)
	if c == nil {
		return nil
	}
	ixID := binary.BigEndian.Uint32(key[collIDKeyLen:])
	for _, ix := range c.state.Load().indexes[1:] {
		if ix.def.ID == ixID {
			return ix
		}
	}
	return nil
}

// equalityLen is the length of key's equality prefix in its index: the
// index prefix and one encoded value per field, without the _id an
// entry ends with. ok is false for keys outside any known index.
func (s *Store) equalityLen(key []byte) (int, bool) {
	ix := s.indexOfKey(key)
	if ix == nil {
		return 0, false
	}
	return valuesLen(key, len(ix.prefix), ix.desc)
}

// valuesLen skips one encoded value per field after the prefix.
func valuesLen(key []byte, prefix int, desc []bool) (int, bool) {
	rest := key[prefix:]
	for _, d := range desc {
		var err error
		if rest, err = keyenc.SkipValue(rest, d); err != nil {
			return 0, false
		}
	}
	return len(key) - len(rest), true
}
