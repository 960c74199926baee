package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/nsname"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/writeops"
)

type famArgs struct {
	coll      string
	filter    *query.Filter
	sort      *query.Sort
	fields    *query.Projection
	remove    bool
	mod       writeops.Modifier
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
	a.opt.Sync, err = r.args().SyncRequested()
	a.opt.Txn = r.storeTxn()
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
	a.filter = guardFilter(r.ctx, a.filter)
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
		if filters, err = cmdargs.DocArray(r.name, "arrayFilters", v); err != nil {
			return err
		}
	}
	a.mod, err = parseModifier(u, filters, lv, coll)
	a.mod = guardModifier(r.ctx, a.mod)
	return err
}

func cmdFindAndModify(h *Handler, r *request) (bson.D, error) {
	a, err := parseFAM(h, r)
	if err != nil {
		return nil, err
	}
	if err := nsname.ValidateUserWrite(r.db, a.coll); err != nil {
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
	rt.Statements(1)
	if prior, done, err := rt.Prior(0); err != nil || done {
		if err != nil {
			return nil, err
		}
		return h.famRetried(a, prior)
	}
	op := h.writeOp(r)
	if c := h.collection(r, r.db, a.coll); c != nil {
		found, err := op.FindAndModify(c, a.write(h.refreshesOnRead(c)), rt, a.opt)
		if err != nil || found.Before != nil {
			if err != nil {
				return nil, famError(err)
			}
			reply, err := h.famResult(a, found.Before, found.After)
			return reply, famError(err)
		}
	}
	if !a.upsert {
		return famReply(bson.D{{Key: "n", Value: int32(0)}}, nil), nil
	}
	doc, err := op.UpsertFound(h.deps.Store, r.db, a.coll, a.write(false), rt, a.opt)
	if err != nil {
		return nil, err
	}
	return h.famUpsertReply(a, doc)
}

// write is the command's write of one document; refresh adds the
// collection's refreshOnRead dates to it.
func (a *famArgs) write(refresh bool) *writeops.FindAndModify {
	return &writeops.FindAndModify{Filter: a.filter, Sort: a.sort, Hint: a.hint, Remove: a.remove, Mod: a.mod, Refresh: refresh}
}

// famRetried answers a retried findAndModify from its record.
func (h *Handler) famRetried(a *famArgs, prior bson.D) (bson.D, error) {
	found, upserted, isUpsert := writeops.FoundRecord(prior)
	if isUpsert {
		return h.famUpsertReply(a, upserted)
	}
	return h.famResult(a, found.Before, found.After)
}

func (h *Handler) famResult(a *famArgs, before, after bson.D) (bson.D, error) {
	if a.remove {
		v, err := a.project(before)
		return famReply(bson.D{{Key: "n", Value: int32(1)}}, v), err
	}
	doc := before
	if a.returnNew {
		doc = after
	}
	v, err := a.project(doc)
	leo := bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: true}}
	return famReply(leo, v), err
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
	return causedBy(famExecContext, err)
}
