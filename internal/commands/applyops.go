package commands

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/oplog"
	"github.com/mayflydb/mayfly/internal/update"
)

// cmdApplyOps applies oplog entries, as mongorestore --oplogReplay sends
// them: in order, each on its own (not atomically, as mongod since 6.2),
// stopping at the first that fails. Inserts of an _id already there and,
// with alwaysUpsert (the default), updates of one not there become
// upserts, so that replaying entries a dump already holds is harmless.
// The entries' ts, t, ui and wall are not used: the writes take this
// server's own stamps, and a collection is found by ns.
func cmdApplyOps(h *Handler, r *request) (bson.D, error) {
	list, ok := r.body[0].Value.(bson.A)
	if !ok {
		return nil, wrongType(r.name, "applyOps", r.body[0].Value, "array")
	}
	if err := checkFields(r, "alwaysUpsert", "bypassDocumentValidation", "oplogApplicationMode", "writeConcern"); err != nil {
		return nil, err
	}
	upsert := true
	if v, ok := bsonutil.Field(r.body, "alwaysUpsert"); ok {
		upsert = expr.Truthy(v)
	}
	bypass, err := optBool(r, "bypassDocumentValidation")
	if err != nil {
		return nil, err
	}
	sync, err := syncRequested(r)
	if err != nil {
		return nil, err
	}
	a := &opApplier{h: h, r: r, upsert: upsert, bypass: bypass, sync: sync}
	applied, err := a.applyAll(list)
	if err != nil {
		return nil, applyOpsFailed(err, applied+1)
	}
	results := make(bson.A, applied)
	for i := range results {
		results[i] = true
	}
	return bson.D{{Key: "applied", Value: int32(applied)}, {Key: "results", Value: results}}, nil
}

// applyAll applies the entries of list in order until one fails, and
// returns how many it applied.
func (a *opApplier) applyAll(list bson.A) (int, error) {
	for i, v := range list {
		op, ok := v.(bson.D)
		if !ok {
			return i, wrongType("applyOps", "applyOps."+strconv.Itoa(i), v, "object")
		}
		if err := a.apply(op); err != nil {
			return i, err
		}
	}
	return len(list), nil
}

// applyOpsFailed is mongod's reply for an entry that failed: its error,
// with how many entries were tried and a false for each.
func applyOpsFailed(err error, tried int) error {
	e := *mongoerr.As(err)
	results := make(bson.A, tried)
	for i := range results {
		results[i] = false
	}
	e.Extra = append(append([]mongoerr.KV(nil), e.Extra...),
		mongoerr.KV{Key: "applied", Value: int32(tried)}, mongoerr.KV{Key: "results", Value: results})
	return &e
}

// opApplier applies one applyOps command's entries.
type opApplier struct {
	h      *Handler
	r      *request
	upsert bool
	bypass bool
	sync   bool // j: true or w: "majority": each write waits for the disk
}

func (a *opApplier) apply(op bson.D) error {
	kind, _ := bsonutil.Field(op, "op")
	if kind == "n" {
		return nil
	}
	nsV, _ := bsonutil.Field(op, "ns")
	ns, _ := nsV.(string)
	db, coll, found := strings.Cut(ns, ".")
	if !found || db == "" || coll == "" {
		return mongoerr.Newf(mongoerr.InvalidNamespace, "invalid ns in an applyOps entry: %q", ns)
	}
	o, _ := bsonutil.Field(op, "o")
	doc, ok := o.(bson.D)
	if !ok {
		return mongoerr.Newf(mongoerr.FailedToParse, "an applyOps entry's 'o' must be an object, not %s", bsonutil.TypeName(o))
	}
	if kind != "c" {
		if err := a.writable(db, coll); err != nil {
			return err
		}
	}
	switch kind {
	case "i":
		return a.insert(db, coll, doc)
	case "u":
		return a.update(db, coll, doc, op)
	case "d":
		return a.remove(db, coll, doc)
	case "c":
		return a.command(db, doc)
	}
	return mongoerr.Newf(mongoerr.BadValue, "unknown op type in an applyOps entry: %v", kind)
}

// writable refuses an entry's write where a client's write is refused:
// an invalid namespace, a system collection the server keeps, a view.
func (a *opApplier) writable(db, coll string) error {
	if err := docstore.ValidateNamespace(db, coll); err != nil {
		return err
	}
	if err := docstore.ValidateUserWrite(db, coll); err != nil {
		return err
	}
	return a.h.refuseView(db, coll)
}

func (a *opApplier) options(db, coll string) docstore.WriteOptions {
	return docstore.WriteOptions{Sync: a.sync, BypassValidation: a.bypass}
}

// insert stores o, or replaces the document with its _id.
func (a *opApplier) insert(db, coll string, o bson.D) error {
	id, ok := bsonutil.Field(o, "_id")
	if !ok {
		return mongoerr.Newf(mongoerr.NoSuchKey, "Failed to apply insert due to missing _id: %s", bsonutil.Format(o))
	}
	c, _, err := a.h.deps.Store.GetOrCreate(db, coll)
	if err != nil {
		return err
	}
	err = c.Insert(o, a.options(db, coll))
	if e := mongoerr.As(err); err == nil || e.Code != mongoerr.DuplicateKey {
		return err
	}
	replaced := false
	_, merr := c.Modify(id, a.options(db, coll), func(cur bson.D) (docstore.Change, error) {
		replaced = cur != nil
		return docstore.Change{Kind: docstore.Replace, Doc: o, Whole: true}, nil
	})
	if merr != nil || !replaced {
		return errors.Join(err, merr) // a duplicate on another unique index
	}
	return nil
}

// update applies o (a $v: 2 diff, update operators or a replacement) to
// the document o2._id names.
func (a *opApplier) update(db, coll string, o, op bson.D) error {
	o2v, _ := bsonutil.Field(op, "o2")
	o2, _ := o2v.(bson.D)
	id, ok := bsonutil.Field(o2, "_id")
	if !ok {
		return mongoerr.Newf(mongoerr.NoSuchKey, "Failed to apply update due to missing _id: %s", bsonutil.Format(op))
	}
	change, err := updateFunc(o, a.h.deps.Clock.Now())
	if err != nil {
		return err
	}
	c := a.h.deps.Store.Collection(db, coll)
	b, _ := bsonutil.Field(op, "b")
	upsert := a.upsert || expr.Truthy(b)
	if c == nil && !upsert {
		return mongoerr.Newf(mongoerr.NamespaceNotFound, "Failed to apply operation due to missing collection (%s.%s)", db, coll)
	}
	found := false
	if c != nil {
		if _, err := c.Modify(id, a.options(db, coll), func(cur bson.D) (docstore.Change, error) {
			if found = cur != nil; !found {
				return docstore.Change{}, nil
			}
			next, err := change(cur, false)
			return docstore.Change{Kind: docstore.Replace, Doc: next, Whole: isReplacement(o)}, err
		}); err != nil || found {
			return err
		}
	}
	if !upsert {
		return nil // mongod applies an update of a missing document as a no-op
	}
	fresh, err := change(bson.D{{Key: "_id", Value: id}}, true)
	if err != nil {
		return err
	}
	return a.insert(db, coll, fresh)
}

// isReplacement reports whether an update entry's o is a whole document.
func isReplacement(o bson.D) bool {
	if _, diff := oplog.IsDiff(o); diff {
		return false
	}
	return len(o) == 0 || !strings.HasPrefix(o[0].Key, "$")
}

// updateFunc is what an update entry's o does to a document.
func updateFunc(o bson.D, now time.Time) (func(cur bson.D, insert bool) (bson.D, error), error) {
	if diff, ok := oplog.IsDiff(o); ok {
		return func(cur bson.D, _ bool) (bson.D, error) { return oplog.ApplyDiff(cur, diff) }, nil
	}
	u, err := update.Parse(o, nil)
	if err != nil {
		return nil, err
	}
	return func(cur bson.D, insert bool) (bson.D, error) {
		next, _, err := u.Apply(cur, update.Context{Now: now, IsInsert: insert, Positional: -1})
		return next, err
	}, nil
}

// remove deletes the document o._id names; a missing one is no error.
func (a *opApplier) remove(db, coll string, o bson.D) error {
	id, ok := bsonutil.Field(o, "_id")
	if !ok {
		return mongoerr.Newf(mongoerr.NoSuchKey, "Failed to apply delete due to missing _id: %s", bsonutil.Format(o))
	}
	c := a.h.deps.Store.Collection(db, coll)
	if c == nil {
		return mongoerr.Newf(mongoerr.NamespaceNotFound, "Failed to apply operation due to missing collection (%s.%s)", db, coll)
	}
	_, err := c.Modify(id, a.options(db, coll), func(cur bson.D) (docstore.Change, error) {
		return docstore.Change{Kind: docstore.Remove}, nil
	})
	return err
}

// oplogCommands are the commands a "c" entry may hold, each turned from
// its oplog form into the command a client sends.
var oplogCommands = map[string]func(o bson.D) bson.D{
	"create":       withoutFields("idIndex"),
	"drop":         withoutFields(),
	"dropDatabase": withoutFields(),
	"collMod":      withoutFields(),
	"dropIndexes":  withoutFields(),
	// one index per entry, its spec beside the collection's name
	"createIndexes": func(o bson.D) bson.D {
		return bson.D{o[0], {Key: "indexes", Value: bson.A{append(bson.D{}, o[1:]...)}}}
	},
	// dropTarget is the dropped collection's UUID in the oplog
	"renameCollection": func(o bson.D) bson.D {
		out := bson.D{}
		for _, e := range o {
			if e.Key == "dropTarget" {
				e.Value = e.Value != false && e.Value != nil
			}
			if e.Key != "stayTemp" {
				out = append(out, e)
			}
		}
		return out
	},
}

func withoutFields(names ...string) func(bson.D) bson.D {
	return func(o bson.D) bson.D {
		out := bson.D{}
		for _, e := range o {
			if !slices.Contains(names, e.Key) {
				out = append(out, e)
			}
		}
		return out
	}
}

// command runs a "c" entry's command against db (renameCollection
// against admin, as mongod runs it), or the entries of a nested applyOps.
func (a *opApplier) command(db string, o bson.D) error {
	if len(o) == 0 {
		return mongoerr.New(mongoerr.FailedToParse, "an applyOps 'c' entry's 'o' is empty")
	}
	name := o[0].Key
	if name == "applyOps" {
		inner, ok := o[0].Value.(bson.A)
		if !ok {
			return wrongType("applyOps", "applyOps", o[0].Value, "array")
		}
		_, err := a.applyAll(inner)
		return err
	}
	convert, ok := oplogCommands[name]
	if !ok {
		return mongoerr.Newf(mongoerr.BadValue, "applyOps does not apply the command '%s' in a 'c' entry", name)
	}
	inner := *a.r
	inner.name, inner.db, inner.body = name, db, convert(o)
	if name == "renameCollection" {
		inner.db = "admin"
	}
	_, err := a.h.table[name].run(a.h, &inner)
	return err
}
