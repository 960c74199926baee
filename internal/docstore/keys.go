package docstore

import (
	"encoding/binary"

	"github.com/mayflydb/mayfly/internal/keyspace"
)

// Key space: docstore owns the catalog, next-ID, document, index and
// warned tags (internal/keyspace lists every tag with its layout).
//
// The _id index has no entries of its own: the document keys are that
// index. The catalog always lists _id_ first.
//
// Index entries end with the document's encoded _id, so entries of a
// non-unique index never collide and an index scan yields document keys
// without a second lookup.
const (
	tagCatalog  = byte(keyspace.Catalog)
	tagNextID   = byte(keyspace.NextID)
	tagDocument = byte(keyspace.Document)
	tagIndex    = byte(keyspace.Index)
	tagWarned   = byte(keyspace.Warned)
)

func catalogKey(db, coll string) []byte {
	k := make([]byte, 0, 2+len(db)+len(coll))
	k = append(k, tagCatalog)
	k = append(k, db...)
	k = append(k, 0)
	return append(k, coll...)
}

func nextIDKey() []byte { return []byte{tagNextID} }

// collPrefix is the start of a collection's keys under tag, with room
// for size bytes in all.
func collPrefix(tag byte, collID uint64, size int) []byte {
	k := make([]byte, 9, size)
	k[0] = tag
	binary.BigEndian.PutUint64(k[1:], collID)
	return k
}

func docPrefix(collID uint64) []byte { return collPrefix(tagDocument, collID, 32) }

func docKey(collID uint64, idEnc []byte) []byte {
	return append(docPrefix(collID), idEnc...)
}

// docKeySize is the length of docKey(collID, idEnc).
func docKeySize(idEnc []byte) int { return 9 + len(idEnc) }

// appendDocKey appends docKey(collID, idEnc) to dst, for a caller that has
// room for it already.
func appendDocKey(dst []byte, collID uint64, idEnc []byte) []byte {
	dst = append(dst, tagDocument)
	dst = binary.BigEndian.AppendUint64(dst, collID)
	return append(dst, idEnc...)
}

func collIndexPrefix(collID uint64) []byte { return collPrefix(tagIndex, collID, 48) }

func indexPrefix(collID uint64, ixID uint32) []byte {
	k := collIndexPrefix(collID)
	return binary.BigEndian.AppendUint32(k, ixID)
}

func collWarnedPrefix(collID uint64) []byte { return collPrefix(tagWarned, collID, 13) }

func warnedKey(collID uint64, ixID uint32) []byte {
	return binary.BigEndian.AppendUint32(collWarnedPrefix(collID), ixID)
}

// prefixEnd returns the first key after every key starting with p.
func prefixEnd(p []byte) []byte { return keyspace.PrefixEnd(p) }
