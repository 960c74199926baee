// Package query implements MongoDB's find-time semantics as pure functions
// over bson.D documents: query filters (Filter), find projections
// (Projection) and sort orders (Sort).
//
// Everything is parsed and validated once by a constructor that returns
// MongoDB's error codes and messages as *mongoerr.Error, and the parsed
// value is then immutable and safe for concurrent use. Matching follows
// MongoDB's matcher rather than a simplified model: a predicate on a path
// matches if any value the path yields matches, where arrays yield their
// elements and themselves, paths run through arrays of documents, numeric
// components index arrays, and comparisons only ever match values of the
// same canonical type. The comments name the MongoDB behaviour they
// reproduce, because most of it is surprising on first sight.
package query
