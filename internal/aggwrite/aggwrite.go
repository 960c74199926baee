// Package aggwrite writes an aggregation's results into a collection, as
// $out and $merge end a pipeline: $out fills a new collection and renames
// it over the target, $merge applies each result to the target by its
// 'on' fields. The aggregate package stays free of storage; ParseStage
// reads the stage, the command layer runs the rest of the pipeline and
// hands its results here.
package aggwrite

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/timeseries"
)

// Target is a parsed $out or $merge.
type Target struct {
	Stage           string // "$out" or "$merge"
	DB, Coll        string
	On              []string
	WhenMatched     string // replace, keepExisting, merge, fail, pipeline
	MatchedPipeline bson.A
	WhenNotMatched  string // insert, discard, fail
}

// Writer writes one pipeline's results.
type Writer struct {
	Store *docstore.Store
	// Opt are the write options of every write (bypassDocumentValidation).
	Opt docstore.WriteOptions
	// Interrupted is checked before each result: the operation's end
	// (maxTimeMS, killOp) as an error, nil while it runs.
	Interrupted func() error
	// Prepare gives a new document its _id and checks what a stored
	// document may hold, as an insert does.
	Prepare func(bson.D) (bson.D, error)
	// RunPipeline runs an update pipeline over doc (whenMatched's).
	RunPipeline func(p *aggregate.Pipeline, doc bson.D) (bson.D, error)
}

// Each calls fn on each document out yields, checking interrupted (the
// operation's end as an error, nil while it runs) before each.
func Each(out aggregate.Iterator, interrupted func() error, fn func(bson.D) error) error {
	for {
		if err := interrupted(); err != nil {
			return err
		}
		d, ok, err := out.Next()
		if err != nil || !ok {
			return err
		}
		if err := fn(d); err != nil {
			return err
		}
	}
}

func (w *Writer) each(out aggregate.Iterator, fn func(bson.D) error) error {
	return Each(out, w.Interrupted, fn)
}

// Out fills a new collection with the results, with the target's
// indexes, and puts it in the target's place: readers see the old
// contents or the new, and a failure leaves the target as it was.
func (w *Writer) Out(t *Target, out aggregate.Iterator) error {
	if old := w.Store.Collection(t.DB, t.Coll); old != nil {
		if err := timeseries.RefuseOut(old.Meta()); err != nil {
			return err
		}
	}
	tmp := fmt.Sprintf("tmp.agg_out.%s", bson.NewObjectID().Hex())
	c, err := w.Store.CreateCollection(t.DB, tmp, docstore.CreateOptions{})
	if err != nil {
		return err
	}
	if err := w.fillOut(c, t, out); err != nil {
		_, _ = w.Store.DropCollection(t.DB, tmp)
		return err
	}
	return w.Store.RenameCollection(t.DB, tmp, t.DB, t.Coll, true)
}

func (w *Writer) fillOut(c *docstore.Collection, t *Target, out aggregate.Iterator) error {
	if old := w.Store.Collection(t.DB, t.Coll); old != nil {
		var ixs []*catalog.Index
		for _, ix := range old.Indexes()[1:] {
			if !ix.Ready {
				continue // its build fails the rename below
			}
			def := ix
			def.ID, def.MultiKeyPaths = 0, nil
			def.MultiKeyTracked = true
			ixs = append(ixs, &def)
		}
		if _, err := c.CreateIndexes(ixs); err != nil {
			return err
		}
	}
	return w.insertResults(c, out)
}

// insertResults inserts the pipeline's documents into c, a new collection
// no client writes, in groups (docstore.InsertGroup): in a replica set one
// raft round for each group, not for each document. The first failure
// ends it.
func (w *Writer) insertResults(c *docstore.Collection, out aggregate.Iterator) error {
	group := make([]docstore.GroupDoc, 0, docstore.InsertGroupDocs)
	flush := func() error {
		errs, _ := c.InsertGroup(group, true)
		group = group[:0]
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	err := w.each(out, func(d bson.D) error {
		doc, err := w.Prepare(d)
		if err != nil {
			return err
		}
		if group = append(group, docstore.GroupDoc{Doc: doc}); len(group) == docstore.InsertGroupDocs {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}
