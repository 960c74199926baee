package docstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/ttlentry"
)

// validateBuckets is how many hash buckets the first pass of validate
// folds index entries into. Each bucket keeps a count and a sum of hashes;
// only the entries of buckets that disagree are held in memory, in a
// second pass, so validating a large collection needs little memory.
const validateBuckets = 1 << 14

// ValidateResult is what validate found in one collection.
type ValidateResult struct {
	Records        int64
	InvalidDocs    int64
	Indexes        []IndexValidation // in catalog order, _id_ first
	ExtraEntries   []bson.D
	MissingEntries []bson.D
	CorruptRecords bson.A
	Errors         []string
	Warnings       []string
}

// IndexValidation is validate's verdict on one index.
type IndexValidation struct {
	Name  string
	Keys  int64
	Valid bool
}

// Valid reports whether validate found nothing wrong.
func (r *ValidateResult) Valid() bool { return len(r.Errors) == 0 }

type keyBucket struct {
	count int64
	sum   uint64
}

// indexCheck follows one secondary index through validation.
type indexCheck struct {
	ix     *indexState
	keys   int64
	errors []string
}

type validation struct {
	ctx context.Context
	c   *Collection
	// pinnedView is what validate reads: the snapshot, and the state and
	// counts the collection kept as of it.
	pinnedView
	// onDoc, when set, is called before each document of the first pass.
	onDoc   func()
	seed    maphash.Seed
	checks  []*indexCheck
	buckets []keyBucket
	res     ValidateResult
	size    int64
}

// Validate checks the collection's storage: every document decodes and is
// stored under its own _id; every index entry belongs to a stored document
// whose computed keys include it; every document has all of its entries in
// every ready index (multikey, sparse and partial rules applied); unique
// indexes hold no duplicate keys; and the document count and data size the
// collection keeps match what is stored. Expired TTL documents that are
// not deleted yet are stored documents and are checked like any other.
// It reads a snapshot taken with the counts it checks (applies.go), so
// writes to the collection go on while it runs and it sees none of them.
func (c *Collection) Validate(ctx context.Context) (*ValidateResult, error) {
	return c.validate(ctx, nil)
}

// validate is Validate calling onDoc, when set, before each document of
// its first pass.
func (c *Collection) validate(ctx context.Context, onDoc func()) (*ValidateResult, error) {
	pv, err := c.pin(ctx)
	if err != nil {
		return nil, fmt.Errorf("docstore: validate %s: %w", c.Namespace(), err)
	}
	defer pv.snap.Close()
	v := c.newValidation(ctx, pv)
	v.onDoc = onDoc
	if err := v.run(); err != nil {
		return nil, fmt.Errorf("docstore: validate %s: %w", c.Namespace(), err)
	}
	return &v.res, nil
}

func (c *Collection) newValidation(ctx context.Context, pv pinnedView) *validation {
	v := &validation{ctx: ctx, c: c, pinnedView: pv, seed: maphash.MakeSeed()}
	for _, ix := range v.st.indexes[1:] {
		if ix.def.Ready {
			v.checks = append(v.checks, &indexCheck{ix: ix})
		}
	}
	v.buckets = make([]keyBucket, validateBuckets)
	return v
}

func (v *validation) run() error {
	if err := v.scanDocs(true, v.countDocKeys); err != nil {
		return err
	}
	for _, ic := range v.checks {
		if err := v.scanIndex(ic, v.countIndexKey); err != nil {
			return err
		}
	}
	if v.bucketsDisagree() {
		if err := v.diagnose(); err != nil {
			return err
		}
	}
	if err := v.checkOrphans(); err != nil {
		return err
	}
	v.checkCounters()
	v.summarise()
	return nil
}

// scanDocs decodes every stored document and hands each of its index
// entries to fn. Documents are counted in the first pass only.
func (v *validation) scanDocs(first bool, fn func(ic *indexCheck, entry []byte, id any)) error {
	p := docPrefix(v.st.meta.ID)
	it, err := v.snap.NewIter(p, prefixEnd(p))
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		// Every document: one may carry thousands of index entries.
		if err := v.ctx.Err(); err != nil {
			return err
		}
		if first && v.onDoc != nil {
			v.onDoc()
		}
		v.doc(it.Key()[len(p):], it.Value(), first, fn)
	}
	return it.Error()
}

// doc checks one stored document and passes on its index entries.
func (v *validation) doc(idEnc, raw []byte, first bool, fn func(*indexCheck, []byte, any)) {
	doc, ok := v.decode(idEnc, raw, first)
	if !ok {
		return
	}
	id, _ := lookupID(doc)
	for _, ic := range v.checks {
		if first {
			v.checkMultikey(ic, doc, id)
		}
		keys, err := ic.ix.entryKeys(doc)
		if err != nil {
			if first {
				v.keyError(ic, idEnc, err)
			}
			continue
		}
		for _, k := range keys {
			fn(ic, entryKey(ic.ix, k, idEnc), id)
		}
	}
}

// decode reads a stored document, recording it as corrupt when it does not
// decode or is stored under another _id than its own.
func (v *validation) decode(idEnc, raw []byte, count bool) (bson.D, bool) {
	var doc bson.D
	err := bson.Unmarshal(raw, &doc)
	if err == nil {
		if id, ok := lookupID(doc); !ok || !bytes.Equal(keyenc.AppendValue(nil, id), idEnc) {
			err = fmt.Errorf("stored under another _id than its own")
		}
	}
	if !count {
		return doc, err == nil
	}
	if err != nil {
		v.res.InvalidDocs++
		v.res.CorruptRecords = append(v.res.CorruptRecords, decodeID(idEnc))
		return nil, false
	}
	v.res.Records++
	v.size += int64(len(raw))
	return doc, true
}

func decodeID(idEnc []byte) any {
	id, _, err := keyenc.DecodeValue(idEnc)
	if err != nil {
		return bson.Binary{Data: idEnc}
	}
	return id
}

func (v *validation) keyError(ic *indexCheck, idEnc []byte, err error) {
	msg := fmt.Sprintf("Could not build key for index '%s' from document with recordId '%s': %v",
		ic.ix.def.Name, bsonutil.Format(decodeID(idEnc)), err)
	ic.errors = append(ic.errors, msg)
}

func (v *validation) hash(entry []byte) uint64 { return maphash.Bytes(v.seed, entry) }

func (v *validation) countDocKeys(_ *indexCheck, entry []byte, _ any) {
	h := v.hash(entry)
	b := &v.buckets[h%validateBuckets]
	b.count++
	b.sum += h
}

// scanIndex walks an index's entries, checking that each one's value is
// the _id its key ends with and that a unique index repeats no key, and
// hands each entry to fn. A touch's stale entries (ttlloose.go) are not
// the document's and not corruption: they are passed over.
func (v *validation) scanIndex(ic *indexCheck, fn func(ic *indexCheck, entry []byte)) error {
	it, err := v.snap.NewIter(ic.ix.prefix, prefixEnd(ic.ix.prefix))
	if err != nil {
		return err
	}
	defer it.Close()
	var prev []byte
	for ok := it.First(); ok; ok = it.Next() {
		if err := v.ctx.Err(); err != nil {
			return err
		}
		if stale, err := v.staleEntry(ic, it.Key(), it.Value()); err != nil || stale {
			if err != nil {
				return err
			}
			continue
		}
		prev = v.checkEntry(ic, it.Key(), it.Value(), prev)
		fn(ic, it.Key())
	}
	return it.Error()
}

// staleEntry reports whether a well-formed loose entry is no longer its
// document's.
func (v *validation) staleEntry(ic *indexCheck, key, value []byte) (bool, error) {
	if _, _, ok := ttlentry.SplitLoose(key, value); !ok {
		return false, nil
	}
	return v.c.skipLoose(ic.ix, key, value, v.snap)
}

// checkEntry returns the entry's key part, for the next entry's unique
// check.
func (v *validation) checkEntry(ic *indexCheck, key, value []byte, prev []byte) []byte {
	idEnc, rec, ok := ttlentry.Split(key, value)
	if !ok || !bytes.HasSuffix(key, idEnc) || len(key) < len(ic.ix.prefix)+len(idEnc) {
		ic.errors = append(ic.errors, fmt.Sprintf("index '%s' has an entry whose value is not the _id its key ends with", ic.ix.def.Name))
		return nil
	}
	if rec != nil {
		v.checkRecord(ic, idEnc, rec, value)
	}
	part := key[len(ic.ix.prefix) : len(key)-len(idEnc)]
	if ic.ix.def.Unique && prev != nil && bytes.Equal(part, prev) {
		ic.errors = append(ic.errors, fmt.Sprintf("Unique index '%s' has duplicate key: %s", ic.ix.def.Name, bsonutil.Format(ic.ix.keyDoc(part))))
	}
	return append([]byte(nil), part...)
}

// checkRecord checks that a TTL entry's deletion record is the one its
// document calls for. A record written for other indexes than today's is
// not used (the monitor reads such documents), so it is not checked; nor
// is one whose document is missing, which the entry counts report.
func (v *validation) checkRecord(ic *indexCheck, idEnc, rec, value []byte) {
	secondary := v.st.indexes[1:]
	if _, ok := ttlentry.WalkRecord(rec, secondary, indexID, nil); !ok {
		return
	}
	raw, err := v.snap.Get(docKey(v.st.meta.ID, idEnc))
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			ic.errors = append(ic.errors, fmt.Sprintf("index '%s': reading the document of an entry: %v", ic.ix.def.Name, err))
		}
		return
	}
	d := &stored{idEnc: idEnc, raw: raw}
	if d.decode() != nil {
		return
	}
	keys := make([][][]byte, len(secondary))
	for i, ix := range secondary {
		if keys[i], err = ix.entryKeys(d.doc); err != nil {
			return
		}
	}
	record := ttlentry.AppendRecord(nil, idEnc, len(raw), secondary, indexID, keys)
	if !bytes.Equal(value, entryValue(ic.ix, idEnc, record, len(keys[slices.Index(secondary, ic.ix)]))) {
		ic.errors = append(ic.errors, fmt.Sprintf("index '%s' has an entry whose deletion record does not match document %s",
			ic.ix.def.Name, bsonutil.Format(decodeID(idEnc))))
	}
}

func (v *validation) countIndexKey(ic *indexCheck, entry []byte) {
	ic.keys++
	h := v.hash(entry)
	b := &v.buckets[h%validateBuckets]
	b.count--
	b.sum -= h
}

func (v *validation) bucketsDisagree() bool {
	for _, b := range v.buckets {
		if b.count != 0 || b.sum != 0 {
			return true
		}
	}
	return false
}

func (v *validation) badBucket(entry []byte) bool {
	b := v.buckets[v.hash(entry)%validateBuckets]
	return b.count != 0 || b.sum != 0
}

// diagnose is the second pass: it collects the expected and the stored
// entries of the buckets that disagree and reports the difference.
func (v *validation) diagnose() error {
	expected := map[string]expectedEntry{}
	err := v.scanDocs(false, func(ic *indexCheck, entry []byte, id any) {
		if v.badBucket(entry) {
			expected[string(entry)] = expectedEntry{ic: ic, id: id}
		}
	})
	if err != nil {
		return err
	}
	for _, ic := range v.checks {
		if err := v.scanIndex(ic, v.matchEntry(expected)); err != nil {
			return err
		}
	}
	for entry, e := range expected {
		v.res.MissingEntries = append(v.res.MissingEntries, e.info([]byte(entry)))
		v.inconsistent(e.ic)
	}
	return nil
}

// expectedEntry is an entry a document calls for, with the document's _id.
type expectedEntry struct {
	ic *indexCheck
	id any
}

// info describes a missing entry as validate's missingIndexEntries do:
// {indexName, recordId, idKey, indexKey}.
func (e expectedEntry) info(entry []byte) bson.D {
	key, _ := e.ic.ix.splitEntry(entry[len(e.ic.ix.prefix):])
	return bson.D{
		{Key: "indexName", Value: e.ic.ix.def.Name},
		{Key: "recordId", Value: e.id},
		{Key: "idKey", Value: bson.D{{Key: "_id", Value: e.id}}},
		{Key: "indexKey", Value: key},
	}
}

// matchEntry removes each stored entry from expected; one that is not
// there is extra.
func (v *validation) matchEntry(expected map[string]expectedEntry) func(*indexCheck, []byte) {
	return func(ic *indexCheck, entry []byte) {
		if !v.badBucket(entry) {
			return
		}
		if _, ok := expected[string(entry)]; ok {
			delete(expected, string(entry))
			return
		}
		v.res.ExtraEntries = append(v.res.ExtraEntries, ic.entryInfo(entry))
		v.inconsistent(ic)
	}
}

func (v *validation) inconsistent(ic *indexCheck) {
	msg := fmt.Sprintf("Index with name '%s' has inconsistencies.", ic.ix.def.Name)
	for _, e := range ic.errors {
		if e == msg {
			return
		}
	}
	ic.errors = append(ic.errors, msg)
}

// entryInfo describes an entry as validate's extraIndexEntries do:
// {indexName, recordId, indexKey}. Mayfly's record id is the document's
// _id, here decoded from the entry (so a number comes back as a long).
func (ic *indexCheck) entryInfo(entry []byte) bson.D {
	key, idEnc := ic.ix.splitEntry(entry[len(ic.ix.prefix):])
	return bson.D{
		{Key: "indexName", Value: ic.ix.def.Name},
		{Key: "recordId", Value: decodeID(idEnc)},
		{Key: "indexKey", Value: key},
	}
}

// splitEntry decodes an entry's key values (as {field: value}) and returns
// the encoded _id that follows them.
func (ix *indexState) splitEntry(rest []byte) (bson.D, []byte) {
	out := make(bson.D, 0, len(ix.def.Fields))
	for _, f := range ix.def.Fields {
		var v any
		var err error
		if f.Desc {
			v, rest, err = keyenc.DecodeValueDesc(rest)
		} else {
			v, rest, err = keyenc.DecodeValue(rest)
		}
		if err != nil {
			return out, rest
		}
		out = append(out, bson.E{Key: f.Path, Value: v})
	}
	return out, rest
}

// keyDoc is an entry's key as {field: value}, its collation keys in hex
// as mongod's messages show them.
func (ix *indexState) keyDoc(part []byte) bson.D {
	d, _ := ix.splitEntry(part)
	if ix.collator != nil {
		return bsonutil.HexStrings(d, "0x", "").(bson.D)
	}
	return d
}

// checkOrphans looks for entries under the collection's index key space
// that belong to no index in the catalog.
func (v *validation) checkOrphans() error {
	known := map[uint32]bool{}
	for _, ix := range v.st.indexes {
		known[ix.def.ID] = true
	}
	p := collIndexPrefix(v.st.meta.ID)
	it, err := v.snap.NewIter(p, prefixEnd(p))
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; {
		id := binary.BigEndian.Uint32(it.Key()[len(p):])
		if !known[id] {
			v.res.Errors = append(v.res.Errors, fmt.Sprintf("found index entries of index id %d, which is not in the catalog", id))
		}
		ok = it.SeekGE(prefixEnd(indexPrefix(v.st.meta.ID, id)))
	}
	return it.Error()
}

// checkCounters compares the count and size the collection kept (which
// count and collStats answer from) with what the snapshot holds.
func (v *validation) checkCounters() {
	if n := v.keptCount; n != v.res.Records+v.res.InvalidDocs {
		v.res.Errors = append(v.res.Errors, fmt.Sprintf("the collection's document count (%d) does not match the number of records found (%d)", n, v.res.Records+v.res.InvalidDocs))
	}
	if v.res.InvalidDocs > 0 {
		return
	}
	if n := v.keptSize; n != v.size {
		v.res.Errors = append(v.res.Errors, fmt.Sprintf("the collection's data size (%d) does not match the size of the records found (%d)", n, v.size))
	}
}

// summarise fills in the per-index verdicts and the totals.
func (v *validation) summarise() {
	r := &v.res
	r.Indexes = append(r.Indexes, IndexValidation{Name: v.st.indexes[0].def.Name, Keys: r.Records, Valid: true})
	for _, ic := range v.checks {
		r.Indexes = append(r.Indexes, IndexValidation{Name: ic.ix.def.Name, Keys: ic.keys, Valid: len(ic.errors) == 0})
		r.Errors = append(r.Errors, ic.errors...)
	}
	if r.InvalidDocs > 0 {
		r.Errors = append(r.Errors, "Detected one or more invalid documents. See logs.")
	}
	if n := len(r.MissingEntries); n > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("Detected %d missing index entries.", n))
	}
	if n := len(r.ExtraEntries); n > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("Detected %d extra index entries.", n))
	}
}

// checkMultikey reports a document whose arrays the index's multikey paths
// do not record: the planner would take bounds too tight for it. The
// index's latest definition is read, as a write may have recorded new
// paths since the validation began.
func (v *validation) checkMultikey(ic *indexCheck, doc bson.D, id any) {
	if ic.ix.multikeyPaths(doc) == nil {
		return
	}
	for _, ix := range v.c.state.Load().indexes {
		if ix.def.ID == ic.ix.def.ID && ix.multikeyPaths(doc) == nil {
			return
		}
	}
	ic.errors = append(ic.errors, fmt.Sprintf("Index '%s' multikey paths do not cover the arrays of document %s", ic.ix.def.Name, bsonutil.Format(id)))
}
