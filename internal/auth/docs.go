package auth

import (
	"errors"
	"fmt"
	"github.com/mayflydb/mayfly/internal/bsonutil"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// userDoc is u as mongod stores it in admin.system.users.
func userDoc(u *User) bson.D {
	d := bson.D{
		{Key: "_id", Value: u.Name.id()},
		{Key: "userId", Value: u.UserID},
		{Key: "user", Value: u.Name.User},
		{Key: "db", Value: u.Name.DB},
		{Key: "credentials", Value: u.Credentials.Document()},
	}
	if u.CustomData != nil {
		d = append(d, bson.E{Key: "customData", Value: u.CustomData})
	}
	return append(d, bson.E{Key: "roles", Value: roleDocs(u.Roles)})
}

func parseUserDoc(d bson.D) (*User, error) {
	u := &User{}
	var err error
	for _, e := range d {
		switch e.Key {
		case "user":
			u.Name.User = stringOf(e.Value)
		case "db":
			u.Name.DB = stringOf(e.Value)
		case "userId":
			u.UserID, _ = e.Value.(bson.Binary)
		case "credentials":
			creds, _ := e.Value.(bson.D)
			u.Credentials, err = parseCredentials(creds)
		case "customData":
			u.CustomData, _ = e.Value.(bson.D)
		case "roles":
			u.Roles, err = parseRoleList(e.Value, "")
		}
		if err != nil {
			return nil, err
		}
	}
	if u.Name.User == "" || u.Name.DB == "" {
		return nil, errors.New("user document without user or db")
	}
	return u, nil
}

// roleDoc is r as mongod stores it in admin.system.roles.
func roleDoc(r *Role) bson.D {
	return bson.D{
		{Key: "_id", Value: r.Name.DB + "." + r.Name.Role},
		{Key: "role", Value: r.Name.Role},
		{Key: "db", Value: r.Name.DB},
		{Key: "privileges", Value: privilegeDocs(r.Privileges)},
		{Key: "roles", Value: roleDocs(r.Roles)},
	}
}

func privilegeDocs(ps []Privilege) bson.A {
	out := bson.A{}
	for _, p := range ps {
		out = append(out, p.Document())
	}
	return out
}

func parseRoleDoc(d bson.D) (*Role, error) {
	r := &Role{}
	var err error
	for _, e := range d {
		switch e.Key {
		case "role":
			r.Name.Role = stringOf(e.Value)
		case "db":
			r.Name.DB = stringOf(e.Value)
		case "privileges":
			r.Privileges, err = parsePrivileges(e.Value)
		case "roles":
			r.Roles, err = parseRoleList(e.Value, "")
		}
		if err != nil {
			return nil, err
		}
	}
	if r.Name.Role == "" || r.Name.DB == "" {
		return nil, errors.New("role document without role or db")
	}
	return r, nil
}

// parsePrivileges reads a privileges array as createRole takes it.
func parsePrivileges(v any) ([]Privilege, error) {
	arr, ok := v.(bson.A)
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "\"privileges\" field must be an array")
	}
	out := make([]Privilege, 0, len(arr))
	for _, x := range arr {
		d, ok := x.(bson.D)
		if !ok {
			return nil, mongoerr.New(mongoerr.BadValue, "Each element of the \"privileges\" array must be an object")
		}
		p, err := parsePrivilege(d)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func parsePrivilege(d bson.D) (Privilege, error) {
	var p Privilege
	res, ok := bsonutil.Field(d, "resource")
	resDoc, isDoc := res.(bson.D)
	if !ok || !isDoc {
		return p, mongoerr.New(mongoerr.FailedToParse, "BSON field 'resource' is missing but a required field")
	}
	r, err := parseResource(resDoc)
	if err != nil {
		return p, err
	}
	p.Resource = r
	acts, _ := bsonutil.Field(d, "actions")
	arr, ok := acts.(bson.A)
	if !ok {
		return p, mongoerr.New(mongoerr.FailedToParse, "BSON field 'actions' is missing but a required field")
	}
	for _, a := range arr {
		s, ok := a.(string)
		if !ok || !knownAction(s) {
			return p, mongoerr.Newf(mongoerr.FailedToParse, "Unrecognized action privilege string: %v", a)
		}
		p.Actions = append(p.Actions, s)
	}
	return p, nil
}

func parseResource(d bson.D) (Resource, error) {
	if v, ok := bsonutil.Field(d, "cluster"); ok && v == true {
		return Resource{Cluster: true}, nil
	}
	if v, ok := bsonutil.Field(d, "anyResource"); ok && v == true {
		return Resource{Any: true}, nil
	}
	db, okDB := bsonutil.Field(d, "db")
	coll, okColl := bsonutil.Field(d, "collection")
	dbs, isDB := db.(string)
	colls, isColl := coll.(string)
	if !okDB || !okColl || !isDB || !isColl {
		return Resource{}, mongoerr.New(mongoerr.BadValue,
			fmt.Sprintf("resource pattern must contain 'db' and 'collection' fields, or 'cluster' or 'anyResource': %v", d))
	}
	return Resource{DB: dbs, Coll: colls}, nil
}

// knownAction reports whether a is an action some built-in role grants
// (the actions Mayfly knows about).
func knownAction(a string) bool {
	for _, set := range [][]string{readActions, writeOnlyActions, dbAdminActions, profileActions, userAdminActions,
		clusterMonitorActions, clusterMonitorDBActions, hostManagerActions, clusterManagerActions,
		userAdminAnyClusterActions, backupRestoreAnyActions} {
		for _, x := range set {
			if x == a {
				return true
			}
		}
	}
	return false
}
