package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/session"
)

// famRetries bounds how often findAndModify looks again when the document
// it found changed before it could take the write lock.
const famRetries = 10

type famArgs struct {
	coll      string
	filter    *query.Filter
	sort      *query.Sort
	fields    *query.Projection
	remove    bool
	mod       modifier
	returnNew bool
	upsert    bool
	hint      any
	opt       docstore.WriteOptions
}

var famFields = []string{"query", "sort", "remove", "update", "new", "fields", "upsert", "arrayFilters", "hint", "collation", "bypassDocumentValidation", "let"}

func parseFAM(h *Handler, r *request) (*famArgs, error) {
	a := &famArgs{}
	var err error
	if a.coll, err = collectionArg(r); err != nil {
		return nil, err
	}
	if err = checkFields(r, famFields...); err != nil {
		return nil, err
	}
	coll, err := h.requestCollation(r)
	if err != nil {
		return nil, err
	}
	lv, err := h.parseLet(r)
	if err != nil {
		return nil, err
	}
	if err = a.parseQueryParts(r, lv, coll); err != nil {
		return nil, err
	}
	if err = a.parseFlags(r, lv, coll); err != nil {
		return nil, err
	}
	a.opt.Sync, err = syncRequested(r)
	return a, err
}

func (a *famArgs) parseQueryParts(r *request, lv *letScope, coll *collation.Collation) error {
	q, err := optDoc(r, "query")
	if err != nil {
		return err
	}
	if a.filter, err = lv.filter(q, coll); err != nil {
		return err
	}
	a.filter = a.filter.Guarded(newGuard(r.ctx))
	if s, err := optDoc(r, "sort"); err != nil {
		return err
	} else if len(s) > 0 {
		if a.sort, err = query.NewSort(s); err != nil {
			return err
		}
		a.sort = collatedSort(a.sort, coll)
	}
	if p, err := optDoc(r, "fields"); err != nil {
		return err
	} else if len(p) > 0 {
		if a.fields, err = query.NewProjection(p); err != nil {
			return err
		}
	}
	a.hint, _ = bsonutil.Field(r.body, "hint")
	return nil
}

func (a *famArgs) parseFlags(r *request, lv *letScope, coll *collation.Collation) error {
	var err error
	if a.remove, err = optBool(r, "remove"); err != nil {
		return err
	}
	if a.returnNew, err = optBool(r, "new"); err != nil {
		return err
	}
	if a.upsert, err = optBool(r, "upsert"); err != nil {
		return err
	}
	u, hasUpdate := bsonutil.Field(r.body, "update")
	switch {
	case a.remove && hasUpdate:
		return mongoerr.New(mongoerr.FailedToParse, "Cannot specify both an update and remove=true")
	case !a.remove && !hasUpdate:
		return mongoerr.New(mongoerr.FailedToParse, "Either an update or remove=true must be specified")
	case a.remove && a.upsert:
		return mongoerr.New(mongoerr.FailedToParse, "Cannot specify both upsert=true and remove=true ")
	case a.remove && a.returnNew:
		return mongoerr.New(mongoerr.FailedToParse, "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document")
	}
	if a.remove {
		return nil
	}
	var filters []bson.D
	if v, ok := bsonutil.Field(r.body, "arrayFilters"); ok {
		if filters, err = docArray(r.name, "arrayFilters", v); err != nil {
			return err
		}
	}
	a.mod, err = parseModifier(u, filters, lv, coll)
	a.mod = guardModifier(a.mod, newGuard(r.ctx))
	return err
}

func cmdFindAndModify(h *Handler, r *request) (bson.D, error) {
	a, err := parseFAM(h, r)
	if err != nil {
		return nil, err
	}
	if err := docstore.ValidateUserWrite(r.db, a.coll); err != nil {
		return nil, err
	}
	if err := h.refuseView(r.db, a.coll); err != nil {
		return nil, err
	}
	if a.opt.BypassValidation, err = bypassArg(r); err != nil {
		return nil, err
	}
	rt, err := h.retryableWrite(r)
	if err != nil {
		return nil, err
	}
	if prior, done, err := rt.Prior(0); err != nil || done {
		if err != nil {
			return nil, err
		}
		return h.famRetried(a, prior)
	}
	if c := h.deps.Store.Collection(r.db, a.coll); c != nil {
		for try := 0; try < famRetries; try++ {
			reply, done, err := h.famOnce(r, c, a, rt)
			if err != nil || done {
				return reply, famError(err)
			}
		}
	}
	if !a.upsert {
		return famReply(bson.D{{Key: "n", Value: int32(0)}}, nil), nil
	}
	return h.famUpsert(r, a, rt)
}

// famRetried answers a retried findAndModify from its record.
func (h *Handler) famRetried(a *famArgs, prior bson.D) (bson.D, error) {
	if v, ok := bsonutil.Field(prior, "upserted"); ok {
		doc, _ := v.(bson.D)
		return h.famUpsertReply(a, doc)
	}
	before, _ := bsonutil.Field(prior, "before")
	after, _ := bsonutil.Field(prior, "after")
	b, _ := before.(bson.D)
	aft, _ := after.(bson.D)
	reply, _, err := h.famResult(a, b, aft)
	return reply, err
}

// famOnce finds the first matching document and modifies it if it still
// matches under the lock. done is false when nothing matched (then the
// caller upserts) or when it must look again.
func (h *Handler) famOnce(r *request, c *docstore.Collection, a *famArgs, rt *session.Txn) (bson.D, bool, error) {
	target, err := h.famTarget(r, c, a)
	if err != nil || target == nil {
		return nil, err != nil, err
	}
	id, _ := bsonutil.Field(target, "_id")
	var before, after bson.D
	matched, refresh := false, h.refreshesOnRead(c)
	opt := recorded(rt, a.opt, 0, func() bson.D { return bson.D{{Key: "before", Value: before}, {Key: "after", Value: after}} })
	_, err = c.Modify(id, opt, func(doc bson.D) (docstore.Change, error) {
		if doc == nil {
			return docstore.Change{}, nil
		}
		ok, pos := a.filter.MatchPositional(doc)
		if !ok {
			return docstore.Change{}, nil
		}
		matched, before = true, doc
		if a.remove {
			return docstore.Change{Kind: docstore.Remove}, nil
		}
		now := h.deps.Clock.Now()
		next, changed, err := a.mod.apply(doc, pos, false, now)
		if err != nil {
			return docstore.Change{}, err
		}
		if refresh {
			next, changed = withRefresh(c, doc, next, changed, now)
		}
		after = doc
		if changed {
			after = next
			return docstore.Change{Kind: docstore.Replace, Doc: next, Whole: a.mod.replacement()}, nil
		}
		return docstore.Change{}, nil
	})
	if err != nil || !matched {
		return nil, err != nil, err
	}
	return h.famResult(a, before, after)
}

func (h *Handler) famResult(a *famArgs, before, after bson.D) (bson.D, bool, error) {
	if a.remove {
		v, err := a.project(before)
		return famReply(bson.D{{Key: "n", Value: int32(1)}}, v), true, err
	}
	doc := before
	if a.returnNew {
		doc = after
	}
	v, err := a.project(doc)
	leo := bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: true}}
	return famReply(leo, v), true, err
}

func (h *Handler) famTarget(r *request, c *docstore.Collection, a *famArgs) (bson.D, error) {
	return firstInOrder(r, c, a.filter, a.sort, a.hint)
}

// firstInOrder returns the first document matching f in the order of s
// (any matching document when s is nil); nil when none matches.
func firstInOrder(r *request, c *docstore.Collection, f *query.Filter, s *query.Sort, hint any) (bson.D, error) {
	plan, err := c.PlanQuery(f, hint)
	if err != nil {
		return nil, err
	}
	it := c.Scan(plan, f).WithContext(r.ctx)
	defer it.Close()
	if s == nil {
		d, _, err := it.Next()
		return d, err
	}
	docs, _, err := sortWithin(r, it, s, 1, false)
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	return docs[0], nil
}

func (a *famArgs) project(doc bson.D) (any, error) {
	if doc == nil {
		return nil, nil
	}
	if a.fields == nil {
		return doc, nil
	}
	return a.fields.Apply(doc, -1)
}

func (h *Handler) famUpsert(r *request, a *famArgs, rt *session.Txn) (bson.D, error) {
	doc, err := upsertDoc(a.filter, a.mod, h.deps.Clock.Now())
	if err != nil {
		return nil, err
	}
	c, _, err := h.deps.Store.GetOrCreate(r.db, a.coll)
	if err != nil {
		return nil, err
	}
	opt := recorded(rt, a.opt, 0, func() bson.D { return bson.D{{Key: "upserted", Value: doc}} })
	if err := insertOne(c, doc, opt); err != nil {
		return nil, err
	}
	return h.famUpsertReply(a, doc)
}

func (h *Handler) famUpsertReply(a *famArgs, doc bson.D) (bson.D, error) {
	id, _ := bsonutil.Field(doc, "_id")
	leo := bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: false}, {Key: "upserted", Value: id}}
	var v any
	if a.returnNew {
		var err error
		if v, err = a.project(doc); err != nil {
			return nil, err
		}
	}
	return famReply(leo, v), nil
}

func famReply(leo bson.D, value any) bson.D {
	return bson.D{{Key: "lastErrorObject", Value: leo}, {Key: "value", Value: value}}
}

// famError gives an error raised while findAndModify ran mongod's context,
// except a duplicate key, which mongod reports as it is.
func famError(err error) error {
	if err == nil || mongoerr.As(err).Code == mongoerr.DuplicateKey {
		return err
	}
	return mongoerr.CausedBy(famExecContext, err)
}

// withRefresh adds to findAndModify's write the refreshOnRead dates of the
// document it returns, so both land in one atomic write.
func withRefresh(c *docstore.Collection, doc, next bson.D, changed bool, now time.Time) (bson.D, bool) {
	base := doc
	if changed {
		base = next
	}
	if fresh, touched := c.Refreshed(base, now); touched {
		return fresh, true
	}
	return next, changed
}
