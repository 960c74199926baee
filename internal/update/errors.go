package update

import (
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Codes MongoDB uses here that the shared table has no name for yet.
const (
	codeCannotBackfillArray = mongoerr.CannotBackfillArray
	codeEmptyFieldName      = mongoerr.EmptyFieldName
)

// maxStorageDepth is MongoDB's nesting limit for stored documents: its BSON
// depth limit (200) less the levels it reserves for system use (20).
const maxStorageDepth = 180

// maxDocumentBytes is the largest document MongoDB stores
// (BSONObjMaxUserSize), as docstore.MaxDocumentSize.
const maxDocumentBytes = 16 << 20

// errTooLarge is MongoDB's error for an update whose result is larger than
// maxDocumentBytes, worded as docstore words it.
func errTooLarge() error {
	return errf(mongoerr.Location17419, "Resulting document after update is larger than %d", maxDocumentBytes)
}

// maxPadding caps the nulls added when setting an array index past its end.
const maxPadding = 1500000

func errf(code mongoerr.Code, format string, args ...any) error {
	return mongoerr.Newf(code, format, args...)
}

func errPositionalNoMatch() error {
	return mongoerr.New(mongoerr.BadValue,
		"The positional operator did not find the match needed from the query.")
}

func errImmutable(path string) error {
	return errf(mongoerr.ImmutableField,
		"Performing an update on the path '%s' would modify the immutable field '_id'", path)
}

const pathNotViable = mongoerr.PathNotViable
