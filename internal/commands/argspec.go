package commands

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// argKind is how mongod's IDL parses a command field: each kind accepts
// its own BSON types and refuses the rest with its own code and words.
type argKind int

const (
	// argOptionalBool is IDL's optionalBool: a bool and nothing else, not
	// even null.
	argOptionalBool argKind = iota
	// argOwnedObject is find's object_owned_nonempty_serialize: an
	// object, not null.
	argOwnedObject
	// argObject is IDL's object and object_owned.
	argObject
	// argSafeInt64 is IDL's safeInt64: any number.
	argSafeInt64
	// argBool is IDL's bool.
	argBool
	// argSafeBool is IDL's safeBool: a bool or a number.
	argSafeBool
)

// argSpecs are the commands' fields as mongod 8.0's IDL types them (the
// command's .idl file under src/mongo/db), checked before the command
// runs and so before any catalog lookup, as mongod parses a command
// whole before it runs it. A handler still checks what the types do not
// say (ranges, shapes).
var argSpecs = map[string]map[string]argKind{
	// src/mongo/db/query/find_command.idl
	"find": {
		"filter": argOwnedObject, "projection": argOwnedObject, "sort": argOwnedObject,
		"collation": argOwnedObject, "min": argOwnedObject, "max": argOwnedObject,
		"$queryOptions": argOwnedObject, "$_resumeAfter": argOwnedObject,
		"let": argObject, "options": argObject, "readConcern": argObject,
		"skip": argSafeInt64, "limit": argSafeInt64, "batchSize": argSafeInt64,
		"ntoreturn": argSafeInt64, "term": argSafeInt64,
		"singleBatch": argOptionalBool, "allowDiskUse": argOptionalBool,
		"returnKey": argOptionalBool, "showRecordId": argOptionalBool,
		"tailable": argOptionalBool, "noCursorTimeout": argOptionalBool,
		"awaitData": argOptionalBool, "allowPartialResults": argOptionalBool,
		"readOnce": argOptionalBool, "allowSpeculativeMajorityRead": argOptionalBool,
		"$_requestResumeToken": argOptionalBool,
	},
	// src/mongo/db/pipeline/aggregate_command.idl
	"aggregate": {
		"allowDiskUse": argOptionalBool, "needsMerge": argOptionalBool,
		"fromMongos": argOptionalBool, "isMapReduceCommand": argOptionalBool,
		"$_requestReshardingResumeToken": argOptionalBool, "$_requestResumeToken": argOptionalBool,
		"$_isClusterQueryWithoutShardKeyCmd": argOptionalBool,
		"bypassDocumentValidation":           argSafeBool, "maxTimeMS": argSafeInt64,
		"readConcern": argObject, "collation": argObject, "let": argObject,
		"$queryOptions": argObject, "$_resumeAfter": argObject,
	},
	// src/mongo/db/ops/write_ops.idl
	"insert": {"ordered": argBool, "bypassDocumentValidation": argSafeBool},
	// src/mongo/db/query/getmore_command.idl: maxTimeMS is the await
	// time here, a safeInt64, not the generic deadline.
	"getMore": {"batchSize": argSafeInt64, "maxTimeMS": argSafeInt64},
}

// argsToDerive are the commands whose IDL types are not in argSpecs yet:
// their handlers check their fields one by one, as before. The list only
// shrinks; TestArgSpecsCoverEveryCommand keeps it honest.
var argsToDerive = []string{
	"abortTransaction", "applyOps", "authenticate", "buildInfo", "bulkWrite", "collMod",
	"collStats", "commitTransaction", "configureFailPoint", "connectionStatus", "count",
	"create", "createIndexes", "createRole", "createSearchIndexes", "createUser", "currentOp", "dataSize", "dbHash",
	"dbStats", "delete", "distinct", "drop", "dropAllRolesFromDatabase",
	"dropAllUsersFromDatabase", "dropDatabase", "dropIndexes", "dropRole", "dropSearchIndex", "dropUser",
	"endSessions", "explain", "findAndModify", "fsync", "fsyncUnlock", "getCmdLineOpts",
	"getLog", "getParameter", "grantPrivilegesToRole", "grantRolesToRole", "grantRolesToUser",
	"hello", "hostInfo", "isMaster", "killAllSessions", "killCursors", "killOp", "killSessions",
	"listCollections", "listCommands", "listDatabases", "listIndexes", "listSearchIndexes", "logout",
	"mayflyCheckpoint", "mayflyReplPartition", "ping", "profile", "refreshSessions",
	"renameCollection", "replSetFreeze", "replSetGetConfig", "replSetGetStatus",
	"replSetInitiate", "replSetRaft", "replSetReconfig", "replSetSnapshot", "replSetStepDown",
	"revokePrivilegesFromRole", "revokeRolesFromRole", "revokeRolesFromUser", "rolesInfo",
	"saslContinue", "saslStart", "serverStatus", "setParameter", "top", "update",
	"updateRole", "updateSearchIndex", "updateUser", "usersInfo", "validate", "whatsmyuri",
	// Member-to-member migration commands.
	"_shardsvrMoveRange", "_recvChunkStart", "_recvChunkStatus", "_recvChunkCommit",
	"_recvChunkReleaseCritSec", "_recvChunkAbort", "_migrateClone", "_transferMods",
	"_configsvrCommitChunkMigration", "_configsvrCommitChunkSplit", "_configsvrBalancerStatus",
}

// checkArgTypes refuses a field of the wrong type as mongod's IDL parser
// does, before the command runs.
func checkArgTypes(r *request, entry command) error {
	spec := argSpecs[entry.name]
	if spec == nil {
		return nil
	}
	for _, e := range r.body[1:] {
		kind, ok := spec[e.Key]
		if !ok {
			continue
		}
		if err := checkArgType(entry.name, e.Key, e.Value, kind); err != nil {
			return err
		}
	}
	return nil
}

func checkArgType(cmd, field string, v any, kind argKind) error {
	switch kind {
	case argOptionalBool:
		if _, ok := v.(bool); !ok {
			return mongoerr.Newf(mongoerr.TypeMismatch, "Field '%s' should be a boolean value, but found: %s", field, bsonutil.TypeName(v))
		}
	case argOwnedObject:
		if _, ok := v.(bson.D); !ok {
			// mongod's words, without the space.
			return mongoerr.Newf(mongoerr.TypeMismatch, "Expected field %sto be of type object", field)
		}
	case argObject:
		if _, ok := v.(bson.D); !ok {
			return wrongType(cmd, field, v, "object")
		}
	case argSafeInt64:
		if !bsonutil.IsNumber(v) {
			return wrongType(cmd, field, v, numberTypes)
		}
	case argBool:
		if _, ok := v.(bool); !ok {
			return wrongType(cmd, field, v, "bool")
		}
	case argSafeBool:
		if _, ok := v.(bool); !ok && !bsonutil.IsNumber(v) {
			return wrongType(cmd, field, v, "[bool, long, int, decimal, double]")
		}
	}
	return nil
}

// parseMaxTimeMS reads the generic maxTimeMS as mongod does for every
// command: a number (2 BadValue otherwise), integral, in [0, 2^31-1].
func parseMaxTimeMS(v any) (int64, error) {
	if !bsonutil.IsNumber(v) {
		return 0, mongoerr.New(mongoerr.BadValue, "maxTimeMS must be a number")
	}
	f := bsonutil.ToFloat(v)
	var ms int64
	switch n := v.(type) {
	case int32:
		ms = int64(n)
	case int64:
		ms = n
	default:
		if !math.IsNaN(f) { // NaN counts as 0, as mongod's safeNumberLong
			ms = int64(math.Max(math.Min(f, math.MaxInt64), math.MinInt64))
		}
	}
	if ms < 0 || ms > math.MaxInt32 {
		return 0, mongoerr.Newf(mongoerr.BadValue, "%d value for maxTimeMS is out of range [0, 2147483647]", ms)
	}
	if _, isDouble := v.(float64); isDouble && f != math.Trunc(f) {
		return 0, mongoerr.New(mongoerr.BadValue, "maxTimeMS has non-integral value")
	}
	return ms, nil
}
