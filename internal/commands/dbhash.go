package commands

import (
	"crypto/md5"
	"encoding/hex"
	"os"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// cmdDBHash answers dbHash as mongod does: an MD5 of each collection's
// stored documents in _id order and one of them all, so that anyone can
// check that the members of a replica set hold the same data.
func cmdDBHash(h *Handler, r *request) (bson.D, error) {
	if err := checkFields(r, "collections"); err != nil {
		return nil, err
	}
	started := h.steady.Now()
	names, err := dbHashCollections(h, r)
	if err != nil {
		return nil, err
	}
	all := md5.New()
	collections, uuids := bson.D{}, bson.D{}
	capped := bson.A{}
	for _, name := range names {
		c := h.deps.Store.Collection(r.db, name)
		if c == nil {
			continue
		}
		sum := md5.New()
		if err := c.EachStored(func(raw []byte) error { _, err := sum.Write(raw); return err }); err != nil {
			return nil, err
		}
		hexSum := hex.EncodeToString(sum.Sum(nil))
		all.Write([]byte(hexSum))
		collections = append(collections, bson.E{Key: name, Value: hexSum})
		uuids = append(uuids, bson.E{Key: name, Value: c.Meta().UUID})
		if c.Meta().Capped {
			capped = append(capped, name)
		}
	}
	return bson.D{
		{Key: "numCollections", Value: int32(len(collections))}, {Key: "host", Value: hostName()},
		{Key: "collections", Value: collections}, {Key: "capped", Value: capped}, {Key: "uuids", Value: uuids},
		{Key: "md5", Value: hex.EncodeToString(all.Sum(nil))},
		{Key: "timeMillis", Value: int32(h.steady.Now().Sub(started).Milliseconds())}, {Key: "fromCache", Value: bson.A{}},
	}, nil
}

func hostName() string {
	host, _ := os.Hostname()
	return host
}

func dbHashCollections(h *Handler, r *request) ([]string, error) {
	v, ok := bsonutil.Field(r.body, "collections")
	if !ok {
		return h.deps.Store.CollectionNames(r.db), nil
	}
	arr, isArr := v.(bson.A)
	if !isArr {
		return nil, wrongType(r.name, "collections", v, "array")
	}
	var names []string
	for _, x := range arr {
		s, isStr := x.(string)
		if !isStr {
			return nil, wrongType(r.name, "collections", x, "string")
		}
		names = append(names, s)
	}
	return names, nil
}
