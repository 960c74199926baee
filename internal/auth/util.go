package auth

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func firstString(body bson.D) string {
	if len(body) == 0 {
		return ""
	}
	return stringOf(body[0].Value)
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

func splitNS(ns string) (db, coll string) {
	db, coll, _ = strings.Cut(ns, ".")
	return db, coll
}

// parseRoleList reads a roles array: each entry a role name (in db) or
// {role, db}.
func parseRoleList(v any, db string) ([]RoleName, error) {
	arr, ok := v.(bson.A)
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "\"roles\" field must be an array")
	}
	out := make([]RoleName, 0, len(arr))
	for _, x := range arr {
		switch r := x.(type) {
		case string:
			out = append(out, RoleName{Role: r, DB: db})
		case bson.D:
			name, _ := bsonutil.Field(r, "role")
			rdb, _ := bsonutil.Field(r, "db")
			rn, okN := name.(string)
			rd, okD := rdb.(string)
			if !okN || !okD {
				return nil, mongoerr.New(mongoerr.BadValue, "Role names must be either strings or objects with \"role\" and \"db\" fields")
			}
			out = append(out, RoleName{Role: rn, DB: rd})
		default:
			return nil, mongoerr.New(mongoerr.BadValue, "Role names must be either strings or objects with \"role\" and \"db\" fields")
		}
	}
	return out, nil
}

func roleDocs(roles []RoleName) bson.A {
	out := bson.A{}
	for _, r := range roles {
		out = append(out, bson.D{{Key: "role", Value: r.Role}, {Key: "db", Value: r.DB}})
	}
	return out
}
