package shardstate

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/migrate"
)

// A migration's records live in this member's config database, written
// through the docstore like any write: on a replica set each is one log
// entry, so a new primary reads what the old one wrote.

func (m *Migrations) recordColl(name string) (*docstore.Collection, error) {
	c, _, err := m.opts.Store.GetOrCreate(migrate.RecordDB, name)
	if err != nil {
		return nil, fmt.Errorf("shardstate: open %s.%s: %w", migrate.RecordDB, name, err)
	}
	return c, nil
}

// putRecord stores rec under its _id, replacing any earlier version.
func (m *Migrations) putRecord(coll string, id string, rec any) error {
	c, err := m.recordColl(coll)
	if err != nil {
		return err
	}
	doc, err := toD(rec)
	if err != nil {
		return err
	}
	return upsert(c, id, doc, docstore.WriteOptions{})
}

func (m *Migrations) deleteRecord(coll, id string) error {
	c, err := m.recordColl(coll)
	if err != nil {
		return err
	}
	_, err = c.Modify(id, docstore.WriteOptions{}, func(cur bson.D) (docstore.Change, error) {
		return docstore.Change{Kind: docstore.Remove}, nil
	})
	if err != nil {
		return fmt.Errorf("shardstate: delete %s %s: %w", coll, id, err)
	}
	return nil
}

// coordinators reads the donor's migration records.
func (m *Migrations) coordinators() ([]migrate.Coordinator, error) {
	return readAll[migrate.Coordinator](m, migrate.CoordinatorsColl)
}

// rangeDeletions reads this member's range deletion tasks.
func (m *Migrations) rangeDeletions() ([]migrate.RangeDeletion, error) {
	return readAll[migrate.RangeDeletion](m, migrate.RangeDeletionsColl)
}

func readAll[T any](m *Migrations, coll string) ([]T, error) {
	c := m.opts.Store.Collection(migrate.RecordDB, coll)
	if c == nil {
		return nil, nil
	}
	it := c.Scan(nil, nil)
	defer it.Close()
	var out []T
	for {
		doc, ok, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("shardstate: read %s: %w", coll, err)
		}
		if !ok {
			return out, nil
		}
		var rec T
		if err := fromD(doc, &rec); err != nil {
			return nil, fmt.Errorf("shardstate: read %s: %w", coll, err)
		}
		out = append(out, rec)
	}
}

// upsert replaces the document with id by doc, or inserts doc.
func upsert(c *docstore.Collection, id any, doc bson.D, opt docstore.WriteOptions) error {
	var found bool
	_, err := c.Modify(id, opt, func(cur bson.D) (docstore.Change, error) {
		found = cur != nil
		return docstore.Change{Kind: docstore.Replace, Doc: doc, Whole: true}, nil
	})
	if err != nil {
		return fmt.Errorf("shardstate: replace %v in %s: %w", id, c.Namespace(), err)
	}
	if found {
		return nil
	}
	if err := c.Insert(doc, opt); err != nil {
		return fmt.Errorf("shardstate: insert %v into %s: %w", id, c.Namespace(), err)
	}
	return nil
}

func toD(v any) (bson.D, error) {
	raw, err := bson.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("shardstate: encode %T: %w", v, err)
	}
	var d bson.D
	if err := bson.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("shardstate: encode %T: %w", v, err)
	}
	return d, nil
}

func fromD(d bson.D, out any) error {
	raw, err := bson.Marshal(d)
	if err != nil {
		return err
	}
	return bson.Unmarshal(raw, out)
}

// PutRecord stores rec under id in this member's config.<coll>,
// replacing any earlier version (a document move's record).
func (m *Migrations) PutRecord(coll, id string, rec any) error { return m.putRecord(coll, id, rec) }

// DeleteRecord deletes config.<coll>'s record id.
func (m *Migrations) DeleteRecord(coll, id string) error { return m.deleteRecord(coll, id) }

// Records reads every record of this member's config.<coll>.
func Records[T any](m *Migrations, coll string) ([]T, error) { return readAll[T](m, coll) }
