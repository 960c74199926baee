package oplog

import (
	"errors"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/nsname"
	"github.com/mayflydb/mayfly/internal/update"
)

// Applier applies oplog entries, as applyOps and mongorestore
// --oplogReplay send them: in order, each on its own (not atomically, as
// mongod since 6.2), stopping at the first that fails. Inserts of an _id
// already there and, with Upsert (alwaysUpsert), updates of one not there
// become upserts, so that replaying entries a dump already holds is
// harmless. The entries' ts, t, ui and wall are not used: the writes take
// this server's own stamps, and a collection is found by ns.
type Applier struct {
	Store  *docstore.Store
	Now    func() time.Time
	Upsert bool
	Opt    docstore.WriteOptions
	// RefuseView refuses a write into db.coll when it is a view.
	RefuseView func(db, coll string) error
	// Command runs a "c" entry's command, as a client sends it, in db.
	Command func(db, name string, body bson.D) error
}

// ApplyAll applies the entries of list in order until one fails, and
// returns how many it applied.
func (a *Applier) ApplyAll(list bson.A) (int, error) {
	for i, v := range list {
		op, ok := v.(bson.D)
		if !ok {
			return i, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field 'applyOps.applyOps.%d' is the wrong type '%s', expected type 'object'", i, bsonutil.TypeName(v))
		}
		if err := a.apply(op); err != nil {
			return i, err
		}
	}
	return len(list), nil
}

func (a *Applier) apply(op bson.D) error {
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
func (a *Applier) writable(db, coll string) error {
	if err := nsname.ValidateNamespace(db, coll); err != nil {
		return err
	}
	if err := nsname.ValidateUserWrite(db, coll); err != nil {
		return err
	}
	return a.RefuseView(db, coll)
}

// insert stores o, or replaces the document with its _id.
func (a *Applier) insert(db, coll string, o bson.D) error {
	id, ok := bsonutil.Field(o, "_id")
	if !ok {
		return mongoerr.Newf(mongoerr.NoSuchKey, "Failed to apply insert due to missing _id: %s", bsonutil.Format(o))
	}
	c, _, err := a.Store.GetOrCreate(db, coll)
	if err != nil {
		return err
	}
	err = c.Insert(o, a.Opt)
	if e := mongoerr.As(err); err == nil || e.Code != mongoerr.DuplicateKey {
		return err
	}
	replaced := false
	_, merr := c.Modify(id, a.Opt, func(cur bson.D) (docstore.Change, error) {
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
func (a *Applier) update(db, coll string, o, op bson.D) error {
	o2v, _ := bsonutil.Field(op, "o2")
	o2, _ := o2v.(bson.D)
	id, ok := bsonutil.Field(o2, "_id")
	if !ok {
		return mongoerr.Newf(mongoerr.NoSuchKey, "Failed to apply update due to missing _id: %s", bsonutil.Format(op))
	}
	change, err := updateFunc(o, a.Now())
	if err != nil {
		return err
	}
	c := a.Store.Collection(db, coll)
	b, _ := bsonutil.Field(op, "b")
	upsert := a.Upsert || expr.Truthy(b)
	if c == nil && !upsert {
		return mongoerr.Newf(mongoerr.NamespaceNotFound, "Failed to apply operation due to missing collection (%s.%s)", db, coll)
	}
	found := false
	if c != nil {
		if _, err := c.Modify(id, a.Opt, func(cur bson.D) (docstore.Change, error) {
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
	if _, diff := IsDiff(o); diff {
		return false
	}
	return len(o) == 0 || !strings.HasPrefix(o[0].Key, "$")
}

// updateFunc is what an update entry's o does to a document.
func updateFunc(o bson.D, now time.Time) (func(cur bson.D, insert bool) (bson.D, error), error) {
	if diff, ok := IsDiff(o); ok {
		return func(cur bson.D, _ bool) (bson.D, error) { return ApplyDiff(cur, diff) }, nil
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
func (a *Applier) remove(db, coll string, o bson.D) error {
	id, ok := bsonutil.Field(o, "_id")
	if !ok {
		return mongoerr.Newf(mongoerr.NoSuchKey, "Failed to apply delete due to missing _id: %s", bsonutil.Format(o))
	}
	c := a.Store.Collection(db, coll)
	if c == nil {
		return mongoerr.Newf(mongoerr.NamespaceNotFound, "Failed to apply operation due to missing collection (%s.%s)", db, coll)
	}
	_, err := c.Modify(id, a.Opt, func(cur bson.D) (docstore.Change, error) {
		return docstore.Change{Kind: docstore.Remove}, nil
	})
	return err
}

// entryCommands are the commands a "c" entry may hold, each turned from
// its oplog form into the command a client sends.
func entryCommands() map[string]func(o bson.D) bson.D {
	return map[string]func(o bson.D) bson.D{
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
func (a *Applier) command(db string, o bson.D) error {
	if len(o) == 0 {
		return mongoerr.New(mongoerr.FailedToParse, "an applyOps 'c' entry's 'o' is empty")
	}
	name := o[0].Key
	if name == "applyOps" {
		inner, ok := o[0].Value.(bson.A)
		if !ok {
			return mongoerr.Newf(mongoerr.TypeMismatch, "BSON field 'applyOps.applyOps' is the wrong type '%s', expected type 'array'", bsonutil.TypeName(o[0].Value))
		}
		_, err := a.ApplyAll(inner)
		return err
	}
	convert, ok := entryCommands()[name]
	if !ok {
		return mongoerr.Newf(mongoerr.BadValue, "applyOps does not apply the command '%s' in a 'c' entry", name)
	}
	if name == "renameCollection" {
		db = "admin"
	}
	return a.Command(db, name, convert(o))
}
