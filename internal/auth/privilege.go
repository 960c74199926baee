package auth

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Resource is what a privilege applies to, as mongod's resource patterns:
// the cluster, any resource at all, or a database and collection where an
// empty DB or Coll means "any" (normal collections only; system
// collections must be named).
type Resource struct {
	Cluster bool
	Any     bool
	DB      string
	Coll    string
}

// Privilege is a set of actions on a resource.
type Privilege struct {
	Resource Resource
	Actions  []string
}

// Target is what one command touches: the cluster, a database (Coll
// empty) or a collection.
type Target struct {
	Cluster bool
	DB      string
	Coll    string
}

// Need is one action a command needs on one target.
type Need struct {
	Target Target
	Action string
}

// matches reports whether r covers t, following mongod's rules: a database
// pattern covers the database and its normal collections, never its
// system collections.
func (r Resource) matches(t Target) bool {
	switch {
	case r.Any:
		return true
	case r.Cluster || t.Cluster:
		return r.Cluster && t.Cluster
	case t.Coll == "":
		return r.Coll == "" && (r.DB == "" || r.DB == t.DB)
	case r.Coll != "":
		return r.Coll == t.Coll && (r.DB == "" || r.DB == t.DB)
	case strings.HasPrefix(t.Coll, "system."):
		return false
	}
	return r.DB == "" || r.DB == t.DB
}

func (p Privilege) allows(n Need) bool {
	if !p.Resource.matches(n.Target) {
		return false
	}
	for _, a := range p.Actions {
		if a == n.Action || a == actionAnyAction {
			return true
		}
	}
	return false
}

// Document is the privilege as rolesInfo and connectionStatus show it.
func (p Privilege) Document() bson.D {
	actions := bson.A{}
	for _, a := range p.Actions {
		actions = append(actions, a)
	}
	return bson.D{{Key: "resource", Value: p.Resource.Document()}, {Key: "actions", Value: actions}}
}

// Document is the resource in mongod's form.
func (r Resource) Document() bson.D {
	switch {
	case r.Any:
		return bson.D{{Key: "anyResource", Value: true}}
	case r.Cluster:
		return bson.D{{Key: "cluster", Value: true}}
	}
	return bson.D{{Key: "db", Value: r.DB}, {Key: "collection", Value: r.Coll}}
}

// Namespace targets.
func clusterTarget() Target        { return Target{Cluster: true} }
func dbTarget(db string) Target    { return Target{DB: db} }
func nsTarget(db, c string) Target { return Target{DB: db, Coll: c} }
func need(t Target, a string) Need { return Need{Target: t, Action: a} }
func needs(t Target, as ...string) []Need {
	out := make([]Need, len(as))
	for i, a := range as {
		out[i] = need(t, a)
	}
	return out
}
