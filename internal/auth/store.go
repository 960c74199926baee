package auth

import (
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
)

// The collections mongod keeps users and roles in.
const (
	adminDB   = "admin"
	usersColl = "system.users"
	rolesColl = "system.roles"
)

var errNoStore = errors.New("auth: no storage for users and roles")

// persister writes user and role documents through the docstore, synced,
// so that a user created is a user that survives a crash. A remote one
// only reads them, from where they are stored (NewRemoteManager).
type persister struct {
	store  *docstore.Store
	remote func(coll string) ([]bson.D, error)
}

func (p persister) load(coll string) ([]bson.D, error) {
	if p.remote != nil {
		return p.remote(coll)
	}
	if p.store == nil {
		return nil, nil
	}
	c := p.store.Collection(adminDB, coll)
	if c == nil {
		return nil, nil
	}
	it := c.Scan(nil, nil)
	defer it.Close()
	var out []bson.D
	for {
		d, ok, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("auth: read admin.%s: %w", coll, err)
		}
		if !ok {
			return out, nil
		}
		out = append(out, d)
	}
}

// put inserts doc, or replaces the document with its _id.
func (p persister) put(coll, id string, doc bson.D) error {
	if p.store == nil {
		return errNoStore
	}
	c, _, err := p.store.GetOrCreate(adminDB, coll)
	if err != nil {
		return err
	}
	opt := docstore.WriteOptions{Sync: true}
	old, err := c.Modify(id, opt, func(cur bson.D) (docstore.Change, error) {
		if cur == nil {
			return docstore.Change{Kind: docstore.Keep}, nil
		}
		return docstore.Change{Kind: docstore.Replace, Doc: doc}, nil
	})
	if err != nil || old != nil {
		return err
	}
	return c.Insert(doc, opt)
}

func (p persister) remove(coll, id string) error {
	if p.store == nil {
		return errNoStore
	}
	c := p.store.Collection(adminDB, coll)
	if c == nil {
		return nil
	}
	_, err := c.Modify(id, docstore.WriteOptions{Sync: true}, func(bson.D) (docstore.Change, error) {
		return docstore.Change{Kind: docstore.Remove}, nil
	})
	return err
}
