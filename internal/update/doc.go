// Package update parses and applies MongoDB update documents: operator
// updates ({$set: ...}) and replacement documents.
//
// The design follows MongoDB's own: Parse turns every operator field into a
// leaf of one tree keyed by path component, so conflicting paths are found
// once, up front, and Apply walks that tree over a document in MongoDB's
// field order (string names lexicographically, array indexes numerically).
// Error codes and messages are MongoDB's, since drivers and applications
// match on them.
//
// Apply never modifies its input. It copies only the containers it writes
// into; untouched nested values of the result are shared with the input,
// and values it writes are shared with the parsed update, so callers must
// treat documents as read-only. A parsed Update may be applied from several
// goroutines at once.
package update
