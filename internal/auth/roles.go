package auth

import "slices"

// actionAnyAction stands for every action, present and future; only the
// internal __system role and root's command fallback hold it.
const actionAnyAction = "anyAction"

// RoleName names a role: built-in roles exist in every database (the
// database-wide ones) or only in admin (the cluster-wide ones).
type RoleName struct {
	Role string
	DB   string
}

func (r RoleName) String() string { return r.Role + "@" + r.DB }

// The action sets of mongod's built-in roles, limited to what Mayfly's
// commands can ask for plus the names mongod reports for them.
var (
	readActions = []string{"changeStream", "collStats", "dbHash", "dbStats", "find", "killCursors",
		"listCollections", "listIndexes", "listSearchIndexes"}
	writeOnlyActions = []string{"convertToCapped", "createCollection", "createIndex", "createSearchIndexes",
		"dropCollection", "dropIndex", "dropSearchIndex", "insert", "remove", "renameCollectionSameDB",
		"update", "updateSearchIndex"}
	dbAdminActions = []string{"analyze", "bypassDocumentValidation", "collMod", "collStats", "compact",
		"convertToCapped", "createCollection", "createIndex", "dbStats", "dropCollection", "dropDatabase",
		"dropIndex", "enableProfiler", "listCollections", "listIndexes", "planCacheIndexFilter",
		"planCacheRead", "planCacheWrite", "reIndex", "renameCollectionSameDB", "storageDetails", "validate"}
	profileActions = []string{"changeStream", "collStats", "convertToCapped", "createCollection", "dbHash",
		"dbStats", "dropCollection", "find", "killCursors", "listCollections", "listIndexes", "planCacheRead"}
	userAdminActions = []string{"changeCustomData", "changePassword", "createRole", "createUser", "dropRole",
		"dropUser", "grantRole", "revokeRole", "setAuthenticationRestriction", "viewRole", "viewUser"}
	clusterMonitorActions = []string{"checkFreeMonitoringStatus", "connPoolStats", "getClusterParameter",
		"getCmdLineOpts", "getDefaultRWConcern", "getLog", "getParameter", "getShardMap", "hostInfo", "inprog",
		"listDatabases", "listSessions", "listShards", "netstat", "operationMetrics", "replSetGetConfig",
		"replSetGetStatus", "serverStatus", "top", "useUUID"}
	clusterMonitorDBActions = []string{"collStats", "dbStats", "getDatabaseVersion", "getShardVersion", "indexStats"}
	hostManagerActions      = []string{"applicationMessage", "connPoolSync", "flushRouterConfig", "fsync",
		"invalidateUserCache", "killAnyCursor", "killAnySession", "killop", "logRotate", "resync",
		"rotateCertificates", "setParameter", "shutdown", "touch", "unlock"}
	clusterManagerActions = []string{"appendOplogNote", "applicationMessage", "cleanupOrphaned",
		"flushRouterConfig", "listSessions", "replSetConfigure", "replSetGetConfig", "replSetGetStatus",
		"replSetStateChange", "resync", "setFeatureCompatibilityVersion", "setFreeMonitoring"}
	userAdminAnyClusterActions = []string{"authSchemaUpgrade", "invalidateUserCache", "listDatabases",
		"viewRole", "viewUser"}
	backupRestoreAnyActions = []string{"collStats", "createCollection", "createIndex", "dbStats",
		"dropCollection", "find", "insert", "listCollections", "listIndexes", "remove", "update", "validate"}
)

// dbRoles are the built-in roles every database has.
var dbRoles = map[string]func(db string) []Privilege{
	"read":      func(db string) []Privilege { return dbPrivileges(db, readActions) },
	"readWrite": func(db string) []Privilege { return dbPrivileges(db, union(readActions, writeOnlyActions)) },
	"dbAdmin":   dbAdminPrivileges,
	"userAdmin": func(db string) []Privilege { return dbPrivileges(db, userAdminActions) },
	"dbOwner": func(db string) []Privilege {
		p := dbPrivileges(db, union(readActions, writeOnlyActions, dbAdminActions, userAdminActions))
		return append(p, Privilege{Resource{DB: db, Coll: "system.profile"}, profileActions})
	},
}

func dbAdminPrivileges(db string) []Privilege {
	return []Privilege{
		{Resource{DB: db}, dbAdminActions},
		{Resource{DB: db, Coll: "system.profile"}, profileActions},
	}
}

// adminRoles are the built-in roles that exist only in admin.
var adminRoles = map[string]func() []Privilege{
	"readAnyDatabase":      func() []Privilege { return anyDB(readActions, "listDatabases") },
	"readWriteAnyDatabase": readWriteAnyDatabase,
	"dbAdminAnyDatabase":   dbAdminAnyDatabase,
	"userAdminAnyDatabase": userAdminAnyDatabase,
	"clusterMonitor":       clusterMonitor,
	"hostManager":          hostManager,
	"clusterManager":       func() []Privilege { return []Privilege{{Resource{Cluster: true}, clusterManagerActions}} },
	"clusterAdmin":         clusterAdmin,
	"root":                 root,
	"__system":             func() []Privilege { return []Privilege{{Resource{Any: true}, []string{actionAnyAction}}} },
}

func readWriteAnyDatabase() []Privilege {
	return anyDB(union(readActions, writeOnlyActions), "listDatabases")
}

func dbAdminAnyDatabase() []Privilege {
	p := anyDB(dbAdminActions, "listDatabases")
	return append(p, Privilege{Resource{Coll: "system.profile"}, profileActions})
}

func userAdminAnyDatabase() []Privilege {
	return []Privilege{
		{Resource{}, userAdminActions},
		{Resource{Cluster: true}, userAdminAnyClusterActions},
		{Resource{DB: "admin", Coll: "system.users"}, []string{"find", "listIndexes", "collStats", "dbHash"}},
		{Resource{DB: "admin", Coll: "system.roles"}, []string{"find", "listIndexes", "collStats", "dbHash"}},
	}
}

func clusterMonitor() []Privilege {
	return []Privilege{
		{Resource{Cluster: true}, clusterMonitorActions},
		{Resource{}, clusterMonitorDBActions},
		{Resource{Coll: "system.profile"}, []string{"find"}},
	}
}

func hostManager() []Privilege {
	return []Privilege{
		{Resource{Cluster: true}, hostManagerActions},
		{Resource{}, []string{"killAnyCursor"}},
	}
}

func clusterAdmin() []Privilege {
	p := append(clusterMonitor(), hostManager()...)
	p = append(p, Privilege{Resource{Cluster: true}, clusterManagerActions})
	return append(p, Privilege{Resource{}, []string{"dropDatabase"}})
}

// root is mongod's union of the any-database roles, clusterAdmin, backup
// and restore; commands not in the table fall back to it (see required.go).
func root() []Privilege {
	p := slices.Concat(readWriteAnyDatabase(), dbAdminAnyDatabase(), userAdminAnyDatabase(), clusterAdmin())
	return append(p, Privilege{Resource{Any: true}, union(backupRestoreAnyActions, []string{actionRootOnly})})
}

func dbPrivileges(db string, actions []string) []Privilege {
	return []Privilege{{Resource{DB: db}, actions}}
}

func anyDB(actions []string, clusterActions ...string) []Privilege {
	return []Privilege{{Resource{}, actions}, {Resource{Cluster: true}, clusterActions}}
}

func union(sets ...[]string) []string {
	var out []string
	for _, s := range sets {
		out = append(out, s...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// builtinPrivileges returns a built-in role's privileges; ok is false
// when r is not a built-in role.
func builtinPrivileges(r RoleName) ([]Privilege, bool) {
	if f, ok := dbRoles[r.Role]; ok {
		return f(r.DB), true
	}
	if f, ok := adminRoles[r.Role]; ok && r.DB == "admin" {
		return f(), true
	}
	return nil, false
}

// IsBuiltin reports whether r names a built-in role.
func IsBuiltin(r RoleName) bool {
	_, ok := builtinPrivileges(r)
	return ok
}
