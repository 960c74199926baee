package diag

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
)

// Hashes are dbHash's figures: an MD5 of each collection's stored
// documents in _id order and one of them all, so that anyone can check
// that the members of a replica set hold the same data.
type Hashes struct {
	Collections, UUIDs bson.D // name → hex MD5, name → UUID
	Capped             bson.A // the names of the capped collections
	All                string // hex MD5 of the collections' hex MD5s
}

// DBHash hashes the named collections of db, all as of one instant;
// names that hold no collection are left out. It stops, with ctx's
// error, once ctx ends.
func DBHash(ctx context.Context, store *docstore.Store, db string, names []string) (Hashes, error) {
	view := store.NewStoredView()
	defer view.Close()
	all := md5.New()
	out := Hashes{Collections: bson.D{}, UUIDs: bson.D{}, Capped: bson.A{}}
	for _, name := range names {
		c := store.Collection(db, name)
		if c == nil {
			continue
		}
		sum := md5.New()
		err := view.EachStored(c, func(raw []byte) error {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("dbHash: %w", err)
			}
			_, err := sum.Write(raw)
			return err
		})
		if err != nil {
			return out, err
		}
		hexSum := hex.EncodeToString(sum.Sum(nil))
		all.Write([]byte(hexSum))
		out.Collections = append(out.Collections, bson.E{Key: name, Value: hexSum})
		out.UUIDs = append(out.UUIDs, bson.E{Key: name, Value: c.Meta().UUID})
		if c.Meta().Capped {
			out.Capped = append(out.Capped, name)
		}
	}
	out.All = hex.EncodeToString(all.Sum(nil))
	return out, nil
}
