package auth

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// actionRootOnly is what a command missing from the table needs: only
// root and the internal __system user hold it, so a command added without
// a line here fails closed instead of open.
const actionRootOnly = "unlistedCommand"

// requirement computes the privileges one invocation needs.
type requirement func(db string, body bson.D) []Need

// open commands run without authentication, as on mongod.
var open = map[string]bool{
	"hello": true, "isMaster": true, "ismaster": true, "ping": true, "buildInfo": true, "buildinfo": true,
	"saslStart": true, "saslContinue": true, "authenticate": true, "logout": true,
	"connectionStatus": true, "whatsmyuri": true, "listCommands": true, "_isSelf": true,
}

// RequiresAuthentication reports whether name answers only a client that
// has logged in (listCommands' requiresAuth).
func RequiresAuthentication(name string) bool { return !open[name] }

// moreRequired are mongod's requirements for commands Mayfly is growing
// (replication, monitoring, administration), so that each is checked as on
// mongod the day it is registered. The replica set's internal commands
// need the internal action, which only the keyFile's __system user holds.
var moreRequired = map[string]requirement{
	"replSetInitiate": onCluster("replSetConfigure"), "replSetReconfig": onCluster("replSetConfigure"),
	"replSetGetStatus": onCluster("replSetGetStatus"), "replSetGetConfig": onCluster("replSetGetConfig"),
	"replSetStepDown": onCluster("replSetStateChange"), "replSetStepUp": onCluster("replSetStateChange"),
	"replSetFreeze": onCluster("replSetStateChange"), "replSetMaintenance": onCluster("replSetStateChange"),
	"replSetSyncFrom": onCluster("replSetStateChange"), "appendOplogNote": onCluster("appendOplogNote"),
	"replSetHeartbeat": onCluster("internal"), "replSetUpdatePosition": onCluster("internal"),
	"replSetRequestVotes": onCluster("internal"), "replSetGetRBID": onCluster("internal"),
	"dbStats": onDB("dbStats"), "collStats": onColl("collStats"), "dbHash": onDB("dbHash"),
	"dataSize": onColl("find"), "top": onCluster("top"), "killOp": onCluster("killop"),
	"connPoolStats": onCluster("connPoolStats"), "lockInfo": onCluster("serverStatus"),
	"fsync": onCluster("fsync"), "fsyncUnlock": onCluster("unlock"), "shutdown": onCluster("shutdown"),
	"logRotate": onCluster("logRotate"), "compact": onColl("compact"), "reIndex": onColl("reIndex"),
	"convertToCapped": onColl("convertToCapped"), "getDefaultRWConcern": onCluster("getDefaultRWConcern"),
	"setDefaultRWConcern": onCluster("setDefaultRWConcern"), "setFeatureCompatibilityVersion": onCluster("setFeatureCompatibilityVersion"),
	"rotateCertificates": onCluster("rotateCertificates"), "startSession": none,
	"commitTransaction": none, "abortTransaction": none, "killAllSessionsByPattern": onCluster("killAnySession"),
	"bulkWrite": bulkWriteNeeds, "getDiagnosticData": onCluster("serverStatus"),
	"listSearchIndexes": onColl("listSearchIndexes"), "createSearchIndexes": onColl("createSearchIndexes"),
	"dropSearchIndex": onColl("dropSearchIndex"), "updateSearchIndex": onColl("updateSearchIndex"),
	"planCacheClear": onColl("planCacheWrite"), "planCacheClearFilters": onColl("planCacheIndexFilter"),
	"planCacheListFilters": onColl("planCacheRead"), "planCacheSetFilter": onColl("planCacheIndexFilter"),
	"analyze": onColl("analyze"), "validateDBMetadata": onDB("validate"),
	"dbhash": onDB("dbHash"), "collstats": onColl("collStats"), "dbstats": onDB("dbStats"), "datasize": onColl("find"),
	// Mayfly's own: raft between members, a test fault, a storage checkpoint.
	"replSetRaft": onCluster("internal"), "replSetSnapshot": onCluster("internal"),
	"mayflyReplPartition": onCluster("internal"), "mayflyCheckpoint": onCluster("fsync"),
	// Migrations between shards and their commit on the config set, sent
	// member to member with the cluster's key, as mongod's.
	"_shardsvrMoveRange": onCluster("internal"), "_recvChunkStart": onCluster("internal"),
	"_recvChunkStatus": onCluster("internal"), "_recvChunkCommit": onCluster("internal"),
	"_recvChunkReleaseCritSec": onCluster("internal"), "_recvChunkAbort": onCluster("internal"),
	"_migrateClone": onCluster("internal"), "_transferMods": onCluster("internal"),
	"_getNextSessionMods": onCluster("internal"), "_shardsvrMoveDocument": onCluster("internal"),
	"_shardsvrDropCollectionParticipant": onCluster("internal"), "_flushRoutingTableCacheUpdates": onCluster("internal"),
	"_shardsvrDropDatabaseParticipant": onCluster("internal"),
	"_configsvrCommitChunkMigration":   onCluster("internal"), "_configsvrCommitChunkSplit": onCluster("internal"),
	"_configsvrBalancerStatus": onCluster("internal"),
	// mongod asks anyAction on anyResource of mongorestore --oplogReplay's
	// applyOps: no built-in role but root (and __system) holds it.
	"applyOps": onCluster(actionAnyAction),
}

// required is the table of what each command needs. Commands that only
// need an authenticated user map to none; getMore and killCursors check the
// cursor's owner where they run.
var required = map[string]requirement{
	"find": onColl("find"), "count": onColl("find"), "distinct": onColl("find"),
	"aggregate": aggregateNeeds,
	"insert":    writeNeeds("insert"), "delete": onColl("remove"), "update": updateNeeds,
	"findAndModify": findAndModifyNeeds, "findandmodify": findAndModifyNeeds,
	"getMore": none, "killCursors": none,
	"create": createNeeds, "drop": onColl("dropCollection"), "dropDatabase": onDB("dropDatabase"),
	"renameCollection": renameNeeds, "listCollections": listCollectionsNeeds,
	"createIndexes": onColl("createIndex"), "listIndexes": onColl("listIndexes"),
	"dropIndexes": onColl("dropIndex"), "deleteIndexes": onColl("dropIndex"),
	"collMod": onColl("collMod"), "validate": onColl("validate"),
	"profile": onDB("enableProfiler"), "currentOp": currentOpNeeds,
	"serverStatus": onCluster("serverStatus"), "getParameter": onCluster("getParameter"),
	"setParameter": onCluster("setParameter"), "getLog": onCluster("getLog"),
	"getCmdLineOpts": onCluster("getCmdLineOpts"), "hostInfo": onCluster("hostInfo"),
	"listDatabases": none, "killAllSessions": onCluster("killAnySession"),
	"endSessions": none, "killSessions": none, "refreshSessions": none,
	"createUser": createUserNeeds, "updateUser": updateUserNeeds, "dropUser": onDB("dropUser"),
	"dropAllUsersFromDatabase": onDB("dropUser"), "usersInfo": none,
	"grantRolesToUser": rolesNeeds("grantRole", "roles"), "revokeRolesFromUser": rolesNeeds("revokeRole", "roles"),
	"createRole": createRoleNeeds, "dropRole": onDB("dropRole"), "rolesInfo": none,
	"updateRole": updateRoleNeeds, "dropAllRolesFromDatabase": onDB("dropRole"),
	"grantPrivilegesToRole": onDB("grantRole"), "revokePrivilegesFromRole": onDB("revokeRole"),
	"grantRolesToRole": rolesNeeds("grantRole", "roles"), "revokeRolesFromRole": rolesNeeds("revokeRole", "roles"),
}

// explain needs what the command it explains needs; it refers back to the
// table, so it joins it once the table exists.
func init() {
	required["explain"] = explainNeeds
	for name, f := range moreRequired {
		required[name] = f
	}
}

// KnownCommand reports whether the table covers name.
func KnownCommand(name string) bool {
	_, ok := required[name]
	return ok || open[name]
}

// requirementsOf returns what running name with body on db needs.
func requirementsOf(db, name string, body bson.D) []Need {
	if f, ok := required[name]; ok {
		return f(db, body)
	}
	return []Need{need(Target{Cluster: true}, actionRootOnly)}
}

func none(string, bson.D) []Need { return nil }

func onColl(action string) requirement {
	return func(db string, body bson.D) []Need {
		return []Need{need(nsTarget(db, firstString(body)), action)}
	}
}

func onDB(action string) requirement {
	return func(db string, _ bson.D) []Need { return []Need{need(dbTarget(db), action)} }
}

func onCluster(action string) requirement {
	return func(string, bson.D) []Need { return []Need{need(clusterTarget(), action)} }
}

func writeNeeds(action string) requirement {
	return func(db string, body bson.D) []Need {
		t := nsTarget(db, firstString(body))
		n := []Need{need(t, action)}
		if v, _ := bsonutil.Field(body, "bypassDocumentValidation"); v == true {
			n = append(n, need(t, "bypassDocumentValidation"))
		}
		return n
	}
}

func updateNeeds(db string, body bson.D) []Need {
	n := writeNeeds("update")(db, body)
	updates, _ := bsonutil.Field(body, "updates")
	arr, _ := updates.(bson.A)
	for _, u := range arr {
		if d, ok := u.(bson.D); ok {
			if v, _ := bsonutil.Field(d, "upsert"); v == true {
				return append(n, need(n[0].Target, "insert"))
			}
		}
	}
	return n
}

func findAndModifyNeeds(db string, body bson.D) []Need {
	t := nsTarget(db, firstString(body))
	n := []Need{need(t, "find")}
	if v, _ := bsonutil.Field(body, "remove"); v == true {
		return append(n, need(t, "remove"))
	}
	n = append(n, need(t, "update"))
	if v, _ := bsonutil.Field(body, "upsert"); v == true {
		n = append(n, need(t, "insert"))
	}
	if v, _ := bsonutil.Field(body, "bypassDocumentValidation"); v == true {
		n = append(n, need(t, "bypassDocumentValidation"))
	}
	return n
}

func createNeeds(db string, body bson.D) []Need {
	n := []Need{need(nsTarget(db, firstString(body)), "createCollection")}
	if src, ok := bsonutil.Field(body, "viewOn"); ok {
		s, _ := src.(string)
		n = append(n, need(nsTarget(db, s), "find"))
	}
	return n
}

// renameNeeds follows mongod: within one database renameCollectionSameDB
// on the database; across databases, reading and dropping the source and
// filling the target.
func renameNeeds(_ string, body bson.D) []Need {
	fromDB, from := splitNS(firstString(body))
	to, _ := bsonutil.Field(body, "to")
	toDB, toColl := splitNS(stringOf(to))
	var n []Need
	if fromDB == toDB {
		n = []Need{need(dbTarget(fromDB), "renameCollectionSameDB")}
	} else {
		n = append(needs(nsTarget(fromDB, from), "find", "dropCollection"),
			needs(nsTarget(toDB, toColl), "insert", "createIndex")...)
	}
	if v, _ := bsonutil.Field(body, "dropTarget"); v == true {
		n = append(n, need(nsTarget(toDB, toColl), "dropCollection"))
	}
	return n
}

// listCollectionsNeeds: with authorizedCollections and nameOnly, any user
// may list the collections it has privileges on (mongosh's "show
// collections" asks that way); otherwise listCollections on the database.
func listCollectionsNeeds(db string, body bson.D) []Need {
	ac, _ := bsonutil.Field(body, "authorizedCollections")
	nameOnly, _ := bsonutil.Field(body, "nameOnly")
	if ac == true && nameOnly == true {
		return nil
	}
	return []Need{need(dbTarget(db), "listCollections")}
}

func currentOpNeeds(_ string, body bson.D) []Need {
	if v, _ := bsonutil.Field(body, "$ownOps"); v == true {
		return nil
	}
	return []Need{need(clusterTarget(), "inprog")}
}

func explainNeeds(db string, body bson.D) []Need {
	inner, ok := body[0].Value.(bson.D)
	if !ok || len(inner) == 0 || inner[0].Key == "explain" {
		return nil
	}
	return requirementsOf(db, inner[0].Key, inner)
}

// aggregateNeeds asks find on the collection aggregated and on every
// collection a stage reads, and the write actions of $out and $merge.
func aggregateNeeds(db string, body bson.D) []Need {
	var n []Need
	c, isColl := body[0].Value.(string)
	if isColl {
		n = append(n, need(nsTarget(db, c), "find"))
	}
	p, _ := bsonutil.Field(body, "pipeline")
	return append(n, pipelineNeeds(db, c, p)...)
}

func pipelineNeeds(db, coll string, p any) []Need {
	stages, _ := p.(bson.A)
	var n []Need
	for _, s := range stages {
		st, ok := s.(bson.D)
		if !ok || len(st) == 0 {
			continue
		}
		n = append(n, stageNeeds(db, coll, st[0].Key, st[0].Value)...)
	}
	return n
}

func stageNeeds(db, coll, stage string, spec any) []Need {
	d, _ := spec.(bson.D)
	switch stage {
	case "$lookup", "$graphLookup":
		from, _ := bsonutil.Field(d, "from")
		sub, _ := bsonutil.Field(d, "pipeline")
		return append(fromNeeds(db, from), pipelineNeeds(db, stringOf(from), sub)...)
	case "$unionWith":
		if s, ok := spec.(string); ok {
			return []Need{need(nsTarget(db, s), "find")}
		}
		other, _ := bsonutil.Field(d, "coll")
		sub, _ := bsonutil.Field(d, "pipeline")
		return append(fromNeeds(db, other), pipelineNeeds(db, stringOf(other), sub)...)
	case "$facet":
		var n []Need
		for _, e := range d {
			n = append(n, pipelineNeeds(db, coll, e.Value)...)
		}
		return n
	case "$out":
		return needs(outTarget(db, spec, "db", "coll"), "insert", "remove")
	case "$merge":
		return needs(mergeTarget(db, spec), "insert", "update")
	case "$currentOp":
		return []Need{need(clusterTarget(), "inprog")}
	case "$changeStream":
		return needs(changeStreamTarget(db, coll, d), "changeStream", "find")
	case "$collStats":
		return []Need{need(nsTarget(db, coll), "collStats")}
	case "$indexStats":
		return []Need{need(nsTarget(db, coll), "indexStats")}
	}
	return nil
}

// changeStreamTarget is what a change stream watches, as mongod checks
// it: the collection, every collection of the database (aggregate: 1),
// or every collection of every database (allChangesForCluster).
func changeStreamTarget(db, coll string, spec bson.D) Target {
	if all, _ := bsonutil.Field(spec, "allChangesForCluster"); all == true {
		return Target{}
	}
	if coll == "" {
		return dbTarget(db)
	}
	return nsTarget(db, coll)
}

func fromNeeds(db string, from any) []Need {
	switch f := from.(type) {
	case string:
		return []Need{need(nsTarget(db, f), "find")}
	case bson.D:
		return []Need{need(outTarget(db, f, "db", "coll"), "find")}
	}
	return nil
}

func outTarget(db string, spec any, dbKey, collKey string) Target {
	if s, ok := spec.(string); ok {
		return nsTarget(db, s)
	}
	d, _ := spec.(bson.D)
	if v, ok := bsonutil.Field(d, dbKey); ok {
		db = stringOf(v)
	}
	c, _ := bsonutil.Field(d, collKey)
	return nsTarget(db, stringOf(c))
}

func mergeTarget(db string, spec any) Target {
	d, ok := spec.(bson.D)
	if !ok {
		return outTarget(db, spec, "db", "coll")
	}
	into, _ := bsonutil.Field(d, "into")
	return outTarget(db, into, "db", "coll")
}

// bulkWriteNeeds asks, per namespace of nsInfo, the actions its
// operations take (bulkWrite runs on admin, naming namespaces in full).
func bulkWriteNeeds(_ string, body bson.D) []Need {
	v, _ := bsonutil.Field(body, "nsInfo")
	infos, _ := v.(bson.A)
	targets := make([]Target, len(infos))
	for i, x := range infos {
		d, _ := x.(bson.D)
		ns, _ := bsonutil.Field(d, "ns")
		db, coll := splitNS(stringOf(ns))
		targets[i] = nsTarget(db, coll)
	}
	ops, _ := bsonutil.Field(body, "ops")
	arr, _ := ops.(bson.A)
	var n []Need
	for _, x := range arr {
		op, _ := x.(bson.D)
		if len(op) == 0 {
			continue
		}
		idx, _ := intValue(op[0].Value)
		if idx < 0 || idx >= len(targets) {
			continue
		}
		n = append(n, bulkOpNeeds(targets[idx], op)...)
	}
	return n
}

func bulkOpNeeds(t Target, op bson.D) []Need {
	switch op[0].Key {
	case "insert":
		return []Need{need(t, "insert")}
	case "delete":
		return []Need{need(t, "remove")}
	case "update":
		if v, _ := bsonutil.Field(op, "upsert"); v == true {
			return needs(t, "update", "insert")
		}
		return []Need{need(t, "update")}
	}
	return nil
}

func createUserNeeds(db string, body bson.D) []Need {
	return append([]Need{need(dbTarget(db), "createUser")}, rolesNeeds("grantRole", "roles")(db, body)...)
}

func createRoleNeeds(db string, body bson.D) []Need {
	return append([]Need{need(dbTarget(db), "createRole")}, rolesNeeds("grantRole", "roles")(db, body)...)
}

func updateUserNeeds(db string, body bson.D) []Need {
	var n []Need
	if _, ok := bsonutil.Field(body, "pwd"); ok {
		n = append(n, need(dbTarget(db), "changePassword"))
	}
	if _, ok := bsonutil.Field(body, "customData"); ok {
		n = append(n, need(dbTarget(db), "changeCustomData"))
	}
	if _, ok := bsonutil.Field(body, "roles"); ok {
		n = append(n, rolesNeeds("grantRole", "roles")(db, body)...)
		n = append(n, rolesNeeds("revokeRole", "roles")(db, body)...)
	}
	return n
}

// updateRoleNeeds: replacing a role's privileges or roles is granting and
// revoking them.
func updateRoleNeeds(db string, body bson.D) []Need {
	n := needs(dbTarget(db), "grantRole", "revokeRole")
	return append(n, rolesNeeds("grantRole", "roles")(db, body)...)
}

// rolesNeeds asks action on the database of every role named in field.
func rolesNeeds(action, field string) requirement {
	return func(db string, body bson.D) []Need {
		v, _ := bsonutil.Field(body, field)
		roles, _ := parseRoleList(v, db)
		var n []Need
		for _, r := range roles {
			n = append(n, need(dbTarget(r.DB), action))
		}
		return n
	}
}
