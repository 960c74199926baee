package commands

import (
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/cursor/paging"
	"github.com/mayflydb/mayfly/internal/docstore"
)

// refreshesOnRead reports whether reads of c that return documents must
// refresh them: c has a refreshOnRead index and this member takes writes
// (a secondary's reads refresh nothing; only the primary writes).
func (h *Handler) refreshesOnRead(c *docstore.Collection) bool {
	if c == nil || !c.RefreshesOnRead() {
		return false
	}
	return h.deps.Repl == nil || h.deps.Repl.Writable()
}

// refreshing wraps src in paging.Refreshing when reads of c refresh.
func (h *Handler) refreshing(c *docstore.Collection, src cursor.Source) cursor.Source {
	if !h.refreshesOnRead(c) {
		return src
	}
	return paging.Refreshing(c, src)
}
