package writeops

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
)

// InsertGroup groups the inserts from statement i on, before statement
// n, for docstore.InsertGroup: each statement's document, which doc
// gives ready to insert (or its error, which ends the group in its
// place), or in a retry the record of one that ran before. done answers
// a committed statement. The group is never empty: statement i is not
// one a retry found. The group is made in into, a zero InsertRun no
// other group uses, or a new one when into is nil.
func (s *Runner) InsertGroup(into *InsertRun, c *docstore.Collection, opt docstore.WriteOptions, ordered bool, i, n int, doc func(j int) (bson.D, error), done Committed) (*Group, error) {
	var g *insertRun
	if into != nil {
		g = &into.run
	} else {
		g = new(insertRun)
	}
	g.c, g.ordered = c, ordered
	g.stmts, g.recs, g.docs = g.stmt1[:0], g.rec1[:0], g.doc1[:0]
	for j := i; j < n && len(g.docs) < docstore.InsertGroupDocs; j++ {
		if j > i {
			rec, found, err := s.Txn.Prior(j)
			if err != nil {
				return nil, err
			}
			if found {
				g.stmts, g.recs = append(g.stmts, insertStmt{doc: -1}), append(g.recs, rec)
				continue
			}
		}
		d, err := doc(j)
		if err != nil {
			g.stmts, g.recs = append(g.stmts, insertStmt{doc: -1, err: err}), append(g.recs, nil)
			break
		}
		g.stmts, g.recs = append(g.stmts, insertStmt{doc: len(g.docs)}), append(g.recs, nil)
		g.docs = append(g.docs, docstore.GroupDoc{Doc: d, Opt: Recorded(s.Txn, opt, j, RecordN(1))})
	}
	g.group = Group{commit: g, recs: g.recs, done: done}
	return &g.group, nil
}

// InsertRun is the room of one insert group (InsertGroup), for a caller
// that allocates it with something of its own. The group lives in it
// until the Runner has answered its statements.
type InsertRun struct{ run insertRun }

// insertRun is a group of inserts into one collection.
type insertRun struct {
	c       *docstore.Collection
	ordered bool
	docs    []docstore.GroupDoc
	stmts   []insertStmt
	recs    []bson.D // by statement: its record, when a retry found one
	// group is the run's Group, and stmt1, rec1, doc1 and err1 the room
	// of a run of one statement (an insertOne): with them the run is one
	// allocation. Nothing is reused: the run is made per group and
	// commits once, and the Runner reads the errors commit returns
	// before it drops the group.
	group Group
	stmt1 [1]insertStmt
	rec1  [1]bson.D
	doc1  [1]docstore.GroupDoc
	err1  [1]error
}

// insertStmt is one statement of an insertRun: its document's index in
// docs, or -1 for a record or a document that failed before the insert
// (err).
type insertStmt struct {
	doc int
	err error
}

// commit inserts the group's documents and gives each statement its
// result, up to an ordered write's first failure.
func (g *insertRun) commit() ([]error, int) {
	var docErrs []error
	attempted := 0
	if len(g.docs) > 0 {
		docErrs, attempted = g.c.InsertGroup(g.docs, g.ordered)
	}
	errs := g.err1[:0]
	if len(g.stmts) > len(g.err1) {
		errs = make([]error, 0, len(g.stmts))
	}
	errs = errs[:len(g.stmts)]
	for k, st := range g.stmts {
		if st.doc < 0 {
			errs[k] = st.err
			continue
		}
		if st.doc >= attempted {
			return errs, k
		}
		errs[k] = docErrs[st.doc]
	}
	return errs, len(g.stmts)
}
