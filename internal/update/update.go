package update

import (
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/query"
)

// Update is a parsed update document, reusable across documents.
type Update struct {
	root        *objNode // &rootNode for an operator update
	rootNode    objNode  // the root, made with the Update
	replacement bson.D   // non-nil for a replacement document
	filters     map[string]*arrayFilter
	source      bson.D
	coll        query.Collator // nil: binary comparisons
	positional  bool           // a path has the positional "$" (UsesPositional)
	// leaf1 is the tree's first leaf, made with the Update (newLeaf).
	leaf1     leafNode
	leaf1Used bool
	// spare is the applier of the Update's first Apply, made with it:
	// most updates apply to one document. spareTaken claims it, since
	// Apply may run concurrently; it serves one Apply only, and is
	// zeroed after it.
	spare      applier
	spareTaken atomic.Bool
}

// Context is what Apply needs to know about the operation in progress.
type Context struct {
	Now        time.Time // for $currentDate (date or {$type: "timestamp"|"date"})
	IsInsert   bool      // applying to a fresh upsert document: $setOnInsert applies only then
	Positional int       // array index matched by the query for the positional `$` operator; -1 if none
	// KeepEmptyTimestamps stores top-level Timestamp(0, 0) values of a
	// replacement as given (the bypassEmptyTsReplacement field).
	KeepEmptyTimestamps bool
}

// UsesPositional reports whether a path of the update has the positional
// "$": only then does Apply read Context.Positional, so a caller need not
// find the array index the query matched for any other update.
func (u *Update) UsesPositional() bool { return u.positional }

// IsReplacement reports whether the update replaces whole documents.
func (u *Update) IsReplacement() bool { return u.replacement != nil }

// Parse validates an update document once. u is either an operator
// document ({$set: ...}) or a replacement document (no $-keys); a document
// is an operator update when its first field starts with '$'. arrayFilters
// are as given in the command. Pipeline updates are not handled here.
func Parse(u bson.D, arrayFilters []bson.D) (*Update, error) {
	return ParseCollated(u, arrayFilters, nil)
}

// ParseCollated is Parse for a statement with a non-simple collation
// (coll), which the comparing operators and arrayFilters apply.
func ParseCollated(u bson.D, arrayFilters []bson.D, coll query.Collator) (*Update, error) {
	if len(u) == 0 || u[0].Key == "" || u[0].Key[0] != '$' {
		return parseReplacement(u, arrayFilters)
	}
	filters, err := parseArrayFilters(arrayFilters, coll)
	if err != nil {
		return nil, err
	}
	up := &Update{filters: filters, source: u, coll: coll}
	up.root = &up.rootNode
	if err := up.parseOperators(); err != nil {
		return nil, err
	}
	return up, up.checkFiltersUsed()
}
