package cmdargs

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
	// argInt is IDL's int: a 32-bit int only.
	argInt
	// argString is IDL's string, and namespacestring.
	argString
	// argArray is IDL's array<...>: the field's type, before its elements'.
	argArray
	// argTimestamp is IDL's timestamp.
	argTimestamp
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
	// src/mongo/db/query/write_ops/write_ops.idl (WriteCommandRequestBase,
	// then each command's fields; a delete's limit is its statements'
	// business, stmtshape.go).
	"insert": {"ordered": argBool, "bypassDocumentValidation": argSafeBool, "stmtId": argInt},
	"update": {"ordered": argBool, "bypassDocumentValidation": argSafeBool, "stmtId": argInt, "let": argObject},
	"delete": {"ordered": argBool, "bypassDocumentValidation": argSafeBool, "stmtId": argInt, "let": argObject},
	"findAndModify": {
		"query": argObject, "fields": argObject, "sort": argObject, "collation": argObject, "let": argObject,
		"arrayFilters": argArray, "remove": argSafeBool, "upsert": argSafeBool, "new": argSafeBool,
		"bypassDocumentValidation": argSafeBool, "stmtId": argInt,
	},
	// src/mongo/db/query/count_command.idl: limit, skip and maxTimeMS
	// have their own deserializers (count.go).
	"count": {"query": argObject, "collation": argObject, "readConcern": argObject, "$queryOptions": argObject},
	// src/mongo/db/query/distinct_command.idl
	"distinct": {"key": argString, "query": argObject, "collation": argObject},
	// src/mongo/db/commands/create.idl: validationLevel and
	// validationAction are enums, checked by name (ddl).
	"create": {
		"capped": argSafeBool, "autoIndexId": argSafeBool, "recordPreImages": argSafeBool, "temp": argSafeBool,
		"size": argSafeInt64, "max": argSafeInt64, "expireAfterSeconds": argSafeInt64, "flags": argSafeInt64,
		"idIndex": argObject, "storageEngine": argObject, "validator": argObject, "indexOptionDefaults": argObject,
		"collation": argObject, "changeStreamPreAndPostImages": argObject, "timeseries": argObject,
		"encryptedFields": argObject, "viewOn": argString, "pipeline": argArray,
	},
	// src/mongo/db/commands/list_databases.idl
	"listDatabases": {"nameOnly": argSafeBool, "authorizedDatabases": argBool, "filter": argObject},
	// src/mongo/db/commands/connection_status.idl
	"connectionStatus": {"showPrivileges": argSafeBool},
	// src/mongo/db/commands/rename_collection.idl: dropTarget is a
	// variant (bool or UUID), checked by the handler.
	"renameCollection": {"to": argString, "stayTemp": argBool},
	// src/mongo/db/repl/hello.idl, whose aliases isMaster and ismaster
	// are; client and saslSupportedMechs have their own parsers.
	"hello":    helloArgs(),
	"isMaster": helloArgs(),
	// src/mongo/db/list_collections.idl: cursor is SimpleCursorOptions.
	"listCollections": {
		"cursor": argObject, "filter": argObject, "nameOnly": argBool, "authorizedCollections": argBool,
		"includePendingDrops": argSafeBool,
	},
	// src/mongo/db/query/kill_cursors.idl
	"killCursors": {"cursors": argArray},
	// src/mongo/db/commands/user_management_commands.idl; rolesInfo's
	// showPrivileges is a bool or "asUserFragment" (its handler).
	"createUser":               userArgs(),
	"updateUser":               userArgs(),
	"dropUser":                 {},
	"dropAllUsersFromDatabase": {},
	"grantRolesToUser":         {"roles": argArray},
	"revokeRolesFromUser":      {"roles": argArray},
	"createRole":               roleArgs(),
	"updateRole":               roleArgs(),
	"grantPrivilegesToRole":    {"privileges": argArray},
	"revokePrivilegesFromRole": {"privileges": argArray},
	"grantRolesToRole":         {"roles": argArray},
	"revokeRolesFromRole":      {"roles": argArray},
	"dropRole":                 {},
	"dropAllRolesFromDatabase": {},
	"usersInfo": {
		"showPrivileges": argSafeBool, "showCredentials": argSafeBool, "showAuthenticationRestrictions": argSafeBool,
		"showCustomData": argSafeBool, "filter": argObject,
	},
	"rolesInfo": {"showBuiltinRoles": argSafeBool, "showAuthenticationRestrictions": argSafeBool},
	// src/mongo/db/create_indexes.idl (v is a safeInt, which takes the
	// same numbers) and src/mongo/db/list_indexes.idl.
	"createIndexes": {"v": argSafeInt64, "indexes": argArray, "ignoreUnknownIndexOptions": argSafeBool, "isTimeseriesNamespace": argBool},
	"listIndexes": {
		"cursor": argObject, "includeBuildUUIDs": argSafeBool, "includeIndexBuildInfo": argSafeBool,
		"isTimeseriesNamespace": argBool,
	},
	// src/mongo/db/commands/profile.idl: filter is an object or "unset",
	// sampleRate a safeDouble (the handler's).
	"profile": {"slowms": argSafeInt64},
	// src/mongo/db/auth/sasl_commands.idl (payload has its own parser)
	// and src/mongo/db/commands/authentication_commands.idl.
	"saslStart":    {"mechanism": argString, "autoAuthorize": argSafeBool, "options": argObject},
	"saslContinue": {"conversationId": argInt},
	"authenticate": {"mechanism": argString, "user": argString},
	"logout":       {},
	// src/mongo/db/commands/fsync.idl
	"fsync": {"lock": argSafeBool, "forBackup": argSafeBool, "allowFsyncFailure": argSafeBool, "fsyncLockAcquisitionTimeoutMillis": argInt},
	// src/mongo/db/commands/search_index_commands.idl: parsed before
	// mongod finds it has no search to run them on.
	"createSearchIndexes": {"indexes": argArray},
	"dropSearchIndex":     {"name": argString, "id": argString},
	"updateSearchIndex":   {"name": argString, "id": argString, "definition": argObject},
	"listSearchIndexes":   {"name": argString, "id": argString},
	// src/mongo/db/drop.idl (collectionUUID, a UUID, is the handler's) and
	// src/mongo/db/drop_database.idl: no typed field but the command's.
	"drop": {}, "dropDatabase": {},
	// src/mongo/db/commands/generic.idl, sessions_commands.idl and
	// src/mongo/db/session/kill_sessions.idl: no field but the command's
	// own value.
	"ping": {}, "endSessions": {}, "refreshSessions": {}, "killSessions": {}, "killAllSessions": {},
	// src/mongo/db/query/getmore_command.idl: maxTimeMS is the await
	// time here, a safeInt64, not the generic deadline.
	"getMore": {"batchSize": argSafeInt64, "maxTimeMS": argSafeInt64},
	// src/mongo/db/commands/txn_cmds.idl: recoveryToken is a
	// TxnRecoveryToken struct, so an object.
	"commitTransaction": {"commitTimestamp": argTimestamp, "recoveryToken": argObject},
	"abortTransaction":  {},
	// src/mongo/db/repl/apply_ops.idl (ApplyOpsCommandInfoBase); the
	// command's own array is its handler's.
	"applyOps": {
		"allowAtomic": argBool, "alwaysUpsert": argBool, "preCondition": argArray,
		"prepare": argBool, "partialTxn": argBool, "count": argSafeInt64,
	},
	// src/mongo/db/commands/query_cmd/bulk_write.idl: cursor is
	// SimpleCursorOptions.
	"bulkWrite": {
		"ops": argArray, "nsInfo": argArray, "cursor": argObject, "bypassDocumentValidation": argSafeBool,
		"ordered": argBool, "stmtId": argInt, "stmtIds": argArray, "let": argObject, "errorsOnly": argBool,
	},
	// src/mongo/db/coll_mod.idl: index, timeseries and
	// changeStreamPreAndPostImages are structs (objects); validationLevel
	// and validationAction are enums and expireAfterSeconds a variant
	// (string or number), the handler's.
	"collMod": {
		"index": argObject, "validator": argObject, "viewOn": argString, "pipeline": argArray,
		"recordPreImages": argSafeBool, "changeStreamPreAndPostImages": argObject, "timeseries": argObject,
		"dryRun": argSafeBool, "cappedSize": argSafeInt64, "cappedMax": argSafeInt64,
	},
	// src/mongo/db/dbcommands.idl: scale's range is the handler's.
	"dbStats": {"scale": argSafeInt64, "freeStorage": argSafeBool},
	// src/mongo/db/drop_indexes.idl: index is a variant (string, array of
	// strings or object) and collectionUUID a UUID, the handler's.
	"dropIndexes": {"isTimeseriesNamespace": argBool},
	// src/mongo/db/commands/query_cmd/explain.idl: verbosity is an enum
	// over strings, so a string first; its values are the handler's.
	"explain": {"verbosity": argString},
}

// helloArgs are hello's fields (src/mongo/db/repl/hello.idl).
func helloArgs() map[string]argKind {
	return map[string]argKind{
		"forShell": argSafeBool, "hangUpOnStepDown": argSafeBool, "helloOk": argSafeBool,
		"hostInfo": argString, "maxAwaitTimeMS": argSafeInt64, "compression": argArray,
		"topologyVersion": argObject, "speculativeAuthenticate": argObject,
	}
}

// userArgs are createUser's and updateUser's fields.
func userArgs() map[string]argKind {
	return map[string]argKind{
		"pwd": argString, "customData": argObject, "roles": argArray, "digestPassword": argSafeBool,
		"authenticationRestrictions": argArray, "mechanisms": argArray,
	}
}

// roleArgs are createRole's and updateRole's fields.
func roleArgs() map[string]argKind {
	return map[string]argKind{"privileges": argArray, "roles": argArray, "authenticationRestrictions": argArray}
}

// argsByHand are the commands with no IDL to derive from: mongod 8.0
// parses them by hand (a BasicCommand reading its fields itself), or
// they are Mayfly's own. Their handlers check their fields as mongod's
// code does; each says why it is here.
var argsByHand = map[string]string{
	"mayflyCheckpoint":    "Mayfly's own",
	"mayflyReplPartition": "Mayfly's own test command",
	"replSetRaft":         "Mayfly's own: the replica set's raft transport",
	"replSetSnapshot":     "Mayfly's own: a member's snapshot transfer",
	"configureFailPoint":  "mongod's reads its data by the fail point's own rules (failpoint.cpp)",
	"serverStatus":        "mongod's sections are read one by one (server_status.cpp)",
	"getParameter":        "mongod's reads each parameter by name (parameters.cpp)",
	"setParameter":        "mongod's reads each parameter by name (parameters.cpp)",
	"collStats":           "a BasicCommand in mongod 8.0 (collection stats, by hand)",
	"dataSize":            "a BasicCommand in mongod 8.0 (dbcommands.cpp)",
	"dbHash":              "a BasicCommand in mongod 8.0 (dbhash.cpp)",
	"currentOp":           "mongod's turns it into a $currentOp pipeline by hand",
	"killOp":              "a BasicCommand in mongod 8.0 (kill_op.cpp)",
	"fsyncUnlock":         "a BasicCommand in mongod 8.0 (fsync.cpp)",
	"getCmdLineOpts":      "a BasicCommand with no fields",
	"getLog":              "a BasicCommand in mongod 8.0 (get_log.cpp)",
	"hostInfo":            "a BasicCommand with no fields",
	"buildInfo":           "a BasicCommand with no fields in mongod 8.0",
	"listCommands":        "a BasicCommand with no fields",
	"top":                 "a BasicCommand with no fields",
	"whatsmyuri":          "a BasicCommand with no fields",
	"validate":            "a BasicCommand in mongod 8.0 (validate.cpp)",
	"replSetFreeze":       "a replication BasicCommand (repl_set_commands.cpp)",
	"replSetGetConfig":    "a replication BasicCommand (repl_set_commands.cpp)",
	"replSetGetStatus":    "a replication BasicCommand (repl_set_commands.cpp)",
	"replSetInitiate":     "a replication BasicCommand (repl_set_commands.cpp)",
	"replSetReconfig":     "a replication BasicCommand (repl_set_commands.cpp)",
	"replSetStepDown":     "a replication BasicCommand (repl_set_commands.cpp)",
	// Member to member: Mayfly's migration protocol and its commit on the
	// config set take Mayfly's own arguments.
	"_shardsvrMoveRange": "Mayfly's own migration protocol", "_recvChunkStart": "Mayfly's own migration protocol",
	"_recvChunkStatus": "Mayfly's own migration protocol", "_recvChunkCommit": "Mayfly's own migration protocol",
	"_recvChunkReleaseCritSec": "Mayfly's own migration protocol", "_recvChunkAbort": "Mayfly's own migration protocol",
	"_migrateClone": "Mayfly's own migration protocol", "_transferMods": "Mayfly's own migration protocol",
	"_getNextSessionMods":                "Mayfly's own migration protocol",
	"_shardsvrMoveDocument":              "Mayfly's own move of a document whose shard key changed",
	"_shardsvrDropCollectionParticipant": "Mayfly's own drop of a shard's copy of a collection",
	"_flushRoutingTableCacheUpdates":     "internal: a shard reads a collection's placement again",
	"_shardsvrDropDatabaseParticipant":   "Mayfly's own drop of a shard's copy of a database",
	"_configsvrCommitChunkMigration":     "Mayfly's own migration protocol",
	"_configsvrCommitChunkSplit":         "Mayfly's own migration protocol",
	"_configsvrBalancerStatus":           "Mayfly's own migration protocol",
}

// CheckTypes refuses a field of command cmd (its own name, not an
// alias) of the wrong type as mongod's IDL parser does, before the
// command runs.
func CheckTypes(cmd string, body bson.D) error {
	spec := argSpecs[cmd]
	if spec == nil || len(body) == 0 {
		return nil
	}
	for _, e := range body[1:] {
		kind, ok := spec[e.Key]
		if !ok {
			continue
		}
		if err := checkArgType(cmd, e.Key, e.Value, kind); err != nil {
			return err
		}
	}
	return nil
}

// Covered tells how a command's arguments are typed: by its IDL (typed),
// or by its handler for the reason why.
func Covered(cmd string) (typed bool, why string) {
	_, typed = argSpecs[cmd]
	return typed, argsByHand[cmd]
}

// Commands are the commands whose arguments this package knows, typed or
// by hand, so that a test can hold them against the command table.
func Commands() []string {
	names := make([]string, 0, len(argSpecs)+len(argsByHand))
	for name := range argSpecs {
		names = append(names, name)
	}
	for name := range argsByHand {
		names = append(names, name)
	}
	return names
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
			return mongoerr.WrongType(cmd, field, v, "object")
		}
	case argSafeInt64:
		if !bsonutil.IsNumber(v) {
			return mongoerr.WrongType(cmd, field, v, NumberTypes)
		}
	case argBool:
		if _, ok := v.(bool); !ok {
			return mongoerr.WrongType(cmd, field, v, "bool")
		}
	case argSafeBool:
		if _, ok := v.(bool); !ok && !bsonutil.IsNumber(v) {
			return mongoerr.WrongType(cmd, field, v, "[bool, long, int, decimal, double]")
		}
	case argInt:
		if _, ok := v.(int32); !ok {
			return mongoerr.WrongType(cmd, field, v, "int")
		}
	case argString:
		if _, ok := v.(string); !ok {
			return mongoerr.WrongType(cmd, field, v, "string")
		}
	case argArray:
		if _, ok := v.(bson.A); !ok {
			return mongoerr.WrongType(cmd, field, v, "array")
		}
	case argTimestamp:
		if _, ok := v.(bson.Timestamp); !ok {
			return mongoerr.WrongType(cmd, field, v, "timestamp")
		}
	}
	return nil
}

// MaxTimeMS reads the generic maxTimeMS as mongod does for every
// command: a number (2 BadValue otherwise), integral, in [0, 2^31-1].
func MaxTimeMS(v any) (int64, error) {
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
