package commands

import (
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/timeseries"
)

// $out and $merge end a pipeline by writing its results to a collection.
// The aggregate package stays free of storage: the command layer strips
// the last stage, runs the rest, and writes what comes out.

// aggTarget is a parsed $out or $merge.
type aggTarget struct {
	stage          string
	db, coll       string
	on             []string
	whenMatched    string // replace, keepExisting, merge, fail, pipeline
	matchedRaw     bson.A
	whenNotMatched string // insert, discard, fail
	opt            docstore.WriteOptions
}

// writeStage finds a $out or $merge: only as the last stage, as in mongod.
func writeStage(r *request) (*aggTarget, error) {
	stages := stagesOf(r)
	for i, s := range stages {
		d, _ := s.(bson.D)
		if len(d) != 1 || (d[0].Key != "$out" && d[0].Key != "$merge") {
			continue
		}
		if i != len(stages)-1 {
			return nil, mongoerr.Newf(mongoerr.Location40601, "%s can only be the final stage in the pipeline", d[0].Key)
		}
		if d[0].Key == "$out" {
			return parseOut(r.db, d[0].Value)
		}
		return parseMerge(r.db, d[0].Value)
	}
	return nil, nil
}

func parseOut(db string, v any) (*aggTarget, error) {
	t := &aggTarget{stage: "$out", db: db}
	switch x := v.(type) {
	case string:
		t.coll = x
	case bson.D:
		dbv, _ := bsonutil.Field(x, "db")
		collv, _ := bsonutil.Field(x, "coll")
		s, ok1 := dbv.(string)
		c, ok2 := collv.(string)
		if !ok1 || !ok2 {
			return nil, mongoerr.New(mongoerr.Location16994, "If an object is passed to $out it must have exactly 2 fields: 'db' and 'coll'")
		}
		t.db, t.coll = s, c
	default:
		return nil, mongoerr.Newf(mongoerr.Location16990, "$out only supports a string or object argument, but found %s", bsonutil.TypeName(v))
	}
	return t, t.checkTarget()
}

func parseMerge(db string, v any) (*aggTarget, error) {
	t := &aggTarget{stage: "$merge", db: db, on: []string{"_id"}, whenMatched: "merge", whenNotMatched: "insert"}
	if s, ok := v.(string); ok {
		t.coll = s
		return t, t.checkTarget()
	}
	d, ok := v.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location51182, "$merge only supports a string or object argument, not %s", bsonutil.TypeName(v))
	}
	for _, e := range d {
		if err := t.mergeOption(e); err != nil {
			return nil, err
		}
	}
	if t.coll == "" {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$merge.into' is missing but a required field")
	}
	return t, t.checkTarget()
}

// checkTarget applies mongod's rules for a $out or $merge target: a valid
// namespace, no system collection and no internal database (admin, local,
// config), each stage with its own codes and wording.
func (t *aggTarget) checkTarget() error {
	if err := docstore.ValidateNamespace(t.db, t.coll); err != nil {
		return err
	}
	system := strings.HasPrefix(t.coll, "system.")
	internal := t.db == "admin" || t.db == "local" || t.db == "config"
	switch {
	case t.stage == "$out" && system:
		return mongoerr.Newf(mongoerr.Location17385, "Can't $out to special collection: %s", t.coll)
	case t.stage == "$out" && internal:
		return mongoerr.Newf(mongoerr.Location31321, "Can't $out to internal database: %s", t.db)
	case system:
		return mongoerr.Newf(mongoerr.Location31319, "Cannot $merge to special collection: %s", t.coll)
	case internal:
		return mongoerr.Newf(mongoerr.Location31320, "Cannot $merge to internal database: %s", t.db)
	}
	return nil
}

func (t *aggTarget) mergeOption(e bson.E) error {
	var err error
	switch e.Key {
	case "into":
		err = t.mergeInto(e.Value)
	case "on":
		t.on, err = mergeOn(e.Value)
	case "whenMatched":
		err = t.mergeWhenMatched(e.Value)
	case "whenNotMatched":
		t.whenNotMatched, err = enumArg("$merge.whenNotMatched", e.Value, "insert", "discard", "fail")
	case "let":
	default:
		err = mongoerr.Newf(mongoerr.Location40415, "BSON field '$merge.%s' is an unknown field.", e.Key)
	}
	return err
}

func (t *aggTarget) mergeInto(v any) error {
	switch x := v.(type) {
	case string:
		t.coll = x
	case bson.D:
		if s, ok := bsonutil.Field(x, "db"); ok {
			t.db, _ = s.(string)
		}
		c, _ := bsonutil.Field(x, "coll")
		t.coll, _ = c.(string)
	default:
		return wrongType("$merge", "into", v, "string")
	}
	return nil
}

func mergeOn(v any) ([]string, error) {
	if s, ok := v.(string); ok {
		return []string{s}, nil
	}
	a, ok := v.(bson.A)
	if !ok || len(a) == 0 {
		return nil, mongoerr.New(mongoerr.Location51186, "$merge 'on' field must be a non-empty array of strings or a string")
	}
	out := make([]string, 0, len(a))
	for _, x := range a {
		s, ok := x.(string)
		if !ok {
			return nil, mongoerr.New(mongoerr.Location51134, "$merge 'on' array elements must be strings")
		}
		out = append(out, s)
	}
	return out, nil
}

func (t *aggTarget) mergeWhenMatched(v any) error {
	if a, ok := v.(bson.A); ok {
		// Parsed here to report errors before anything runs; each
		// matched document parses it again with its own $$new.
		_, err := aggregate.Parse(a, aggregate.Options{Let: bson.D{{Key: "new", Value: nil}}})
		t.whenMatched, t.matchedRaw = "pipeline", a
		return err
	}
	var err error
	t.whenMatched, err = enumArg("$merge.whenMatched", v, "replace", "keepExisting", "merge", "fail")
	return err
}

func enumArg(field string, v any, allowed ...string) (string, error) {
	s, _ := v.(string)
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field '%s' is not a valid value.", bsonutil.Format(v), field)
}

// aggregateInto runs the pipeline without its last stage and writes the
// results to the target; the reply is an empty cursor, as mongod's.
func (h *Handler) aggregateInto(r *request, coll string, t *aggTarget) (bson.D, error) {
	inner := *r
	inner.body = withPipeline(r.body, stagesOf(r)[:len(stagesOf(r))-1])
	out, err := h.runAggregate(&inner, coll)
	if err != nil {
		return nil, err
	}
	return h.writeInto(r, r.db+"."+coll, t, out)
}

// writeInto writes a pipeline's results, out, into t's collection and
// replies as an aggregate with a write stage does: an empty cursor on ns.
func (h *Handler) writeInto(r *request, ns string, t *aggTarget, out aggregate.Iterator) (bson.D, error) {
	defer out.Close()
	if err := h.refuseView(t.db, t.coll); err != nil {
		return nil, err
	}
	var err error
	if t.stage == "$out" {
		err = h.writeOut(r, t, out)
	} else {
		err = h.writeMerge(r, t, out)
	}
	if err != nil {
		return nil, causedBy(aggregateExecContext, err)
	}
	return cursorDoc(0, ns, "firstBatch", bson.A{}), nil
}

func withPipeline(body bson.D, stages bson.A) bson.D {
	out := make(bson.D, len(body))
	copy(out, body)
	for i := range out {
		if out[i].Key == "pipeline" {
			out[i].Value = stages
		}
	}
	return out
}

// writeOut fills a new collection with the results, with the target's
// indexes, and puts it in the target's place: readers see the old
// contents or the new, and a failure leaves the target as it was.
func (h *Handler) writeOut(r *request, t *aggTarget, out aggregate.Iterator) error {
	store := h.deps.Store
	if old := store.Collection(t.db, t.coll); old != nil {
		if err := timeseries.RefuseOut(old.Meta()); err != nil {
			return err
		}
	}
	tmp := fmt.Sprintf("tmp.agg_out.%s", bson.NewObjectID().Hex())
	c, err := store.CreateCollection(t.db, tmp, docstore.CreateOptions{})
	if err != nil {
		return err
	}
	if err := h.fillOut(r, c, t, out); err != nil {
		_, _ = store.DropCollection(t.db, tmp)
		return err
	}
	return store.RenameCollection(t.db, tmp, t.db, t.coll, true)
}

func (h *Handler) fillOut(r *request, c *docstore.Collection, t *aggTarget, out aggregate.Iterator) error {
	if old := h.deps.Store.Collection(t.db, t.coll); old != nil {
		var ixs []*catalog.Index
		for _, ix := range old.Indexes()[1:] {
			def := ix
			def.ID, def.MultiKeyPaths = 0, nil
			def.MultiKeyTracked = true
			ixs = append(ixs, &def)
		}
		if _, err := c.CreateIndexes(ixs); err != nil {
			return err
		}
	}
	return insertResults(r, c, out)
}

// insertResults inserts the pipeline's documents into c, a new collection
// no client writes, in groups (docstore.InsertGroup): in a replica set one
// raft round for each group, not for each document. The first failure
// ends it.
func insertResults(r *request, c *docstore.Collection, out aggregate.Iterator) error {
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
	err := eachResult(r, out, func(d bson.D) error {
		doc, err := prepareForInsert(d)
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

// eachResult calls fn on each document the pipeline yields.
func eachResult(r *request, out aggregate.Iterator, fn func(bson.D) error) error {
	for {
		if err := checkInterrupt(r.ctx); err != nil {
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

// writeMerge applies each result to the target by its 'on' fields.
func (h *Handler) writeMerge(r *request, t *aggTarget, out aggregate.Iterator) error {
	c, _, err := h.deps.Store.GetOrCreate(t.db, t.coll)
	if err != nil {
		return err
	}
	if err := checkMergeIndex(c, t.on); err != nil {
		return err
	}
	bypass, err := bypassArg(r)
	if err != nil {
		return err
	}
	t.opt = docstore.WriteOptions{BypassValidation: bypass}
	if len(t.on) == 1 && t.on[0] == "_id" {
		return h.mergeByID(r, c, t, out)
	}
	return eachResult(r, out, func(d bson.D) error { return h.mergeOne(c, t, d) })
}

// mergeByID merges the results on _id in groups (docstore.ModifyGroup):
// in a replica set one raft round for each group of up to 64, not for
// each document. A group ends before a result whose _id it already
// holds, so that the later result meets the earlier one's write.
func (h *Handler) mergeByID(r *request, c *docstore.Collection, t *aggTarget, out aggregate.Iterator) error {
	var docs []bson.D
	var ids []any
	held := map[string]bool{}
	flush := func() error {
		err := h.mergeRun(c, t, docs, ids)
		docs, ids = docs[:0], ids[:0]
		clear(held)
		return err
	}
	err := eachResult(r, out, func(d bson.D) error {
		v := bsonutil.PathValues(d, "_id")
		if len(v) != 1 {
			if err := flush(); err != nil {
				return err
			}
			return mongoerr.New(mongoerr.Location51132, "$merge write error: 'on' field '_id' cannot be missing, null, undefined or an array")
		}
		key := string(keyenc.AppendValue(nil, v[0]))
		if held[key] || len(docs) == docstore.InsertGroupDocs {
			if err := flush(); err != nil {
				return err
			}
		}
		held[key] = true
		docs, ids = append(docs, d), append(ids, v[0])
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// mergeRun merges docs, whose _ids are ids, into c in one group.
func (h *Handler) mergeRun(c *docstore.Collection, t *aggTarget, docs []bson.D, ids []any) error {
	if len(docs) == 0 {
		return nil
	}
	_, err := c.ModifyGroup(ids, t.opt, func(i int, cur bson.D) (docstore.Change, error) {
		if cur == nil {
			return mergeUnmatchedChange(t, docs[i])
		}
		next, err := h.mergedDoc(t, cur, docs[i])
		if next == nil || err != nil {
			return docstore.Change{}, err
		}
		return docstore.Change{Kind: docstore.Replace, Doc: next, Whole: t.whenMatched == "replace"}, nil
	})
	return err
}

// mergeUnmatchedChange is whenNotMatched for d, which matched nothing.
func mergeUnmatchedChange(t *aggTarget, d bson.D) (docstore.Change, error) {
	switch t.whenNotMatched {
	case "discard":
		return docstore.Change{}, nil
	case "fail":
		return docstore.Change{}, mergeNoMatch()
	}
	doc, err := prepareForInsert(d)
	return docstore.Change{Kind: docstore.Insert, Doc: doc}, err
}

// checkMergeIndex: 'on' fields other than _id need a unique index on
// exactly them, so that a result matches at most one document.
func checkMergeIndex(c *docstore.Collection, on []string) error {
	if len(on) == 1 && on[0] == "_id" {
		return nil
	}
	for _, ix := range c.Indexes() {
		if ix.Unique && sameFields(ix.Fields, on) {
			return nil
		}
	}
	return mongoerr.New(mongoerr.Location51183, "Cannot find index to verify that join fields will be unique")
}

func sameFields(fields []catalog.Field, on []string) bool {
	if len(fields) != len(on) {
		return false
	}
	for _, f := range fields {
		if !contains(on, f.Path) {
			return false
		}
	}
	return true
}

func (h *Handler) mergeOne(c *docstore.Collection, t *aggTarget, d bson.D) error {
	match := bson.D{}
	for _, path := range t.on {
		v := bsonutil.PathValues(d, path)
		if len(v) != 1 {
			return mongoerr.Newf(mongoerr.Location51132, "$merge write error: 'on' field '%s' cannot be missing, null, undefined or an array", path)
		}
		match = append(match, bson.E{Key: path, Value: v[0]})
	}
	f, err := query.NewFilter(match)
	if err != nil {
		return err
	}
	target, err := firstInOrder(&request{}, c, f, nil, nil)
	if err != nil {
		return err
	}
	if target == nil {
		return h.mergeUnmatched(c, t, d)
	}
	return h.mergeMatched(c, t, target, d)
}

// mergeNoMatch is whenNotMatched: "fail" meeting a result that matched
// nothing.
func mergeNoMatch() error {
	return mongoerr.New(mongoerr.MergeStageNoMatchingDocument, "$merge could not find a matching document in the target collection for at least one document in the source collection")
}

func (h *Handler) mergeUnmatched(c *docstore.Collection, t *aggTarget, d bson.D) error {
	switch t.whenNotMatched {
	case "discard":
		return nil
	case "fail":
		return mergeNoMatch()
	}
	return insertOne(c, d, t.opt)
}

// mergedDoc is whenMatched for d, which matched target: the document to
// put in target's place, or nil to keep it.
func (h *Handler) mergedDoc(t *aggTarget, target, d bson.D) (bson.D, error) {
	id, _ := bsonutil.Field(target, "_id")
	switch t.whenMatched {
	case "keepExisting":
		return nil, nil
	case "fail":
		return nil, mongoerr.Newf(mongoerr.DuplicateKey, "$merge with whenMatched: fail found an existing document with the same values for the 'on' fields: %s", bsonutil.Format(id))
	case "replace":
		return append(bson.D{{Key: "_id", Value: id}}, withoutField(d, "_id")...), nil
	case "merge":
		return mergeFields(target, d), nil
	}
	return t.applyMatchedPipeline(target, d, h.deps.Clock)
}

func (h *Handler) mergeMatched(c *docstore.Collection, t *aggTarget, target, d bson.D) error {
	id, _ := bsonutil.Field(target, "_id")
	next, err := h.mergedDoc(t, target, d)
	if next == nil || err != nil {
		return err
	}
	_, err = c.Modify(id, t.opt, func(cur bson.D) (docstore.Change, error) {
		if cur == nil {
			return docstore.Change{}, nil
		}
		return docstore.Change{Kind: docstore.Replace, Doc: next, Whole: t.whenMatched == "replace"}, nil
	})
	return err
}

// mergeFields sets each field of d on target, as whenMatched: "merge".
func mergeFields(target, d bson.D) bson.D {
	out := append(bson.D(nil), target...)
	for _, e := range d {
		replaced := false
		for i := range out {
			if out[i].Key == e.Key {
				out[i].Value, replaced = e.Value, true
				break
			}
		}
		if !replaced {
			out = append(out, e)
		}
	}
	return out
}

// applyMatchedPipeline runs whenMatched's pipeline over the existing
// document with $$new bound to the result.
func (t *aggTarget) applyMatchedPipeline(target, d bson.D, clk interface{ Now() time.Time }) (bson.D, error) {
	p, err := aggregate.Parse(t.matchedRaw, aggregate.Options{Let: bson.D{{Key: "new", Value: bson.D{{Key: "$literal", Value: d}}}}})
	if err != nil {
		return nil, err
	}
	next, _, err := pipelineModifier{p: p}.apply(target, -1, false, clk.Now())
	return next, err
}

// documentsAggregate runs {aggregate: 1} over a leading $documents: the
// pipeline reads no collection.
func (h *Handler) documentsAggregate(r *request, stages bson.A, batch int64) (bson.D, error) {
	t, err := writeStage(r)
	if err != nil {
		return nil, err
	}
	read := r
	if t != nil { // $documents then $out or $merge: a collection seeded from the command
		inner := *r
		inner.body = withPipeline(r.body, stages[:len(stages)-1])
		read = &inner
	}
	p, err := h.parsePipeline(read)
	if err != nil {
		return nil, err
	}
	out, err := p.Run(&sliceSource{}, nilEnv{now: h.deps.Clock.Now(), guard: newGuard(r.ctx)})
	if err != nil {
		return nil, causedBy(aggregateExecContext, err)
	}
	ns := r.db + ".$cmd.aggregate"
	if t != nil {
		return h.writeInto(r, ns, t, out)
	}
	reply, err := h.requestCursorReply(r, ns, out, batch, false)
	return reply, causedBy(aggregateExecContext, err)
}
