// Package keyspace declares the storage engine's key space: every key
// starts with one tag byte, and this is the one list of tags, each with
// the package that owns the keys under it and their layout. A package that
// writes keys takes its tag from here, so that two owners can never share
// a byte and a newcomer finds the whole key space in one place.
package keyspace

// Tag is the first byte of a key.
type Tag byte

// The tags, in byte order of the layouts below.
const (
	// Recording marks a standalone store whose change log is on
	// (changestream): the key is the tag alone.
	Recording Tag = 'E'
	// Catalog holds a collection's definition (docstore):
	// 'c' db 0x00 coll → catalog.Collection (BSON).
	Catalog Tag = 'c'
	// Document holds a document (docstore):
	// 'd' collID(8) keyenc(_id) → the document (BSON).
	Document Tag = 'd'
	// Events holds the change log (changestream):
	// 'e' ts(8) index(4) → a change event (BSON).
	Events Tag = 'e'
	// Index holds secondary index entries (docstore):
	// 'i' collID(8) ixID(4) keyenc(key…) keyenc(_id) → keyenc(_id).
	Index Tag = 'i'
	// NextID holds the next collection ID (docstore): 'n' → 8 bytes.
	NextID Tag = 'n'
	// Patch holds the write-behind's log (pebblestore): 'p' key →
	// uvarint(offset) bytes, the bytes at offset in which the value held
	// back at key differs from the one stored there; and 'p' 0x00 → empty,
	// the mark of touches held back whose log is their TTL entry.
	Patch Tag = 'p'
	// Raft holds the replica set's raft state and log (repl):
	// 'r' 'h' | 'm' | 'a' | 'l' index(8) | 'i' | 'c' | 'x'.
	Raft Tag = 'r'
	// Session holds retryable-write records (session): a session's head,
	// 's' len(id) id 0x00 → txnNumber(8) lastWrite(8) firstStmt(4) lastStmt(4),
	// and its statements,
	// 's' len(id) id 0x01 txnNumber(8) stmt(4) → the statement's result.
	Session Tag = 's'
	// Warned holds how far expiry warnings were sent (docstore):
	// 'w' collID(8) ixID(4) → the time warned up to.
	Warned Tag = 'w'
	// Staged holds a snapshot's keys while a member installs it (repl):
	// 'z' key → value, swapped in when raft accepts the snapshot.
	Staged Tag = 'z'
)

// Entry is one tag's declaration.
type Entry struct {
	Tag   Tag
	Owner string // the package that writes the keys
	Name  string
}

// DefinesCatalog reports whether t's keys define collections, so that a
// write under it changes the catalog (a replica set's members reload it).
func (t Tag) DefinesCatalog() bool { return t == Catalog || t == NextID }

// CatalogWithin reports whether a key range whose first bytes run from lo
// to hi (inclusive) may hold keys that define collections. It is on the
// write path, so it allocates nothing.
func CatalogWithin(lo, hi byte) bool {
	return within(lo, hi, Catalog) || within(lo, hi, NextID)
}

func within(lo, hi byte, t Tag) bool { return lo <= byte(t) && byte(t) <= hi }

// All lists every tag, in byte order.
func All() []Entry {
	return []Entry{
		{Recording, "changestream", "change log on"},
		{Catalog, "docstore", "catalog"},
		{Document, "docstore", "documents"},
		{Events, "changestream", "change log"},
		{Index, "docstore", "index entries"},
		{NextID, "docstore", "next collection ID"},
		{Patch, "pebblestore", "write-behind log"},
		{Raft, "repl", "raft state and log"},
		{Session, "session", "retryable-write records"},
		{Warned, "docstore", "expiry warnings sent"},
		{Staged, "repl", "staged snapshot"},
	}
}

// Start is the first key under t; End is the first key past it.
func (t Tag) Start() []byte { return []byte{byte(t)} }

// End is the first key after every key under t.
func (t Tag) End() []byte { return []byte{byte(t) + 1} }

// PrefixEnd is the first key after every key that starts with p; nil
// when there is none (p is all 0xff).
func PrefixEnd(p []byte) []byte { return AppendPrefixEnd(nil, p) }

// AppendPrefixEnd appends PrefixEnd(p) to dst and returns the result, or
// nil when there is no end (p is all 0xff): for a caller with room for
// the end already. p must not overlap dst's spare capacity.
func AppendPrefixEnd(dst, p []byte) []byte {
	n := len(dst)
	end := append(dst, p...)
	for i := len(end) - 1; i >= n; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
