package commands

import (
	"os"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/diag"
)

// cmdDBHash answers dbHash as mongod does, with diag.DBHash's hashes.
func cmdDBHash(h *Handler, r *request) (bson.D, error) {
	if err := checkFields(r, "collections"); err != nil {
		return nil, err
	}
	started := h.steady.Now()
	names, err := dbHashCollections(h, r)
	if err != nil {
		return nil, err
	}
	sums, err := diag.DBHash(r.ctx, h.deps.Store, r.db, names)
	if err != nil {
		return nil, interruptionOr(r.ctx, err)
	}
	return bson.D{
		{Key: "numCollections", Value: int32(len(sums.Collections))}, {Key: "host", Value: hostName()},
		{Key: "collections", Value: sums.Collections}, {Key: "capped", Value: sums.Capped}, {Key: "uuids", Value: sums.UUIDs},
		{Key: "md5", Value: sums.All},
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
