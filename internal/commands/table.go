package commands

import "go.mongodb.org/mongo-driver/v2/bson"

// aliasOf maps MongoDB's historical spellings to the command they stand
// for.
var aliasOf = map[string]string{
	"ismaster": "isMaster", "buildinfo": "buildInfo", "findandmodify": "findAndModify",
	"dbhash": "dbHash", "deleteIndexes": "dropIndexes",
}

// buildTable lists every command Mayfly answers. Names are matched
// exactly, with MongoDB's historical lower-case aliases.
func buildTable() map[string]command {
	t := map[string]command{}
	for name, run := range map[string]func(*Handler, *request) (bson.D, error){
		"hello": cmdHello, "isMaster": cmdHello, "ismaster": cmdHello,
		"ping": cmdPing, "buildInfo": cmdBuildInfo, "buildinfo": cmdBuildInfo,
		"getParameter": cmdGetParameter, "setParameter": cmdSetParameter,
		"getLog": cmdGetLog, "getCmdLineOpts": cmdGetCmdLineOpts, "hostInfo": cmdHostInfo,
		"serverStatus": cmdServerStatus, "connectionStatus": cmdAuth,
		"whatsmyuri": cmdWhatsMyURI, "listDatabases": cmdListDatabases,
		"endSessions": cmdEndSessions, "killSessions": cmdEmptyOK, "refreshSessions": cmdRefreshSessions,
		"killAllSessions": cmdEmptyOK, "logout": cmdAuth,
		"dropAllUsersFromDatabase": cmdAuth, "usersInfo": cmdAuth,
		"listCollections": cmdListCollections, "create": cmdCreate, "drop": cmdDrop,
		"dropDatabase": cmdDropDatabase, "renameCollection": cmdRenameCollection,
		"createIndexes": cmdCreateIndexes, "listIndexes": cmdListIndexes,
		"dropIndexes": cmdDropIndexes, "deleteIndexes": cmdDropIndexes, "collMod": cmdCollMod,
		"insert": cmdInsert, "update": cmdUpdate, "delete": cmdDelete,
		"findAndModify": cmdFindAndModify, "findandmodify": cmdFindAndModify,
		"find": cmdFind, "getMore": cmdGetMore, "killCursors": cmdKillCursors,
		"count": cmdCount, "distinct": cmdDistinct, "aggregate": cmdAggregate,
		"profile": cmdProfile, "currentOp": cmdCurrentOp,
		"explain":         cmdExplain,
		"validate":        cmdValidate,
		"replSetInitiate": cmdReplSetInitiate, "replSetGetStatus": cmdReplSetGetStatus,
		"replSetGetConfig": cmdReplSetGetConfig, "replSetReconfig": cmdReplSetReconfig,
		"replSetStepDown": cmdReplSetStepDown, "replSetFreeze": cmdReplSetFreeze,
		"replSetRaft": cmdReplSetRaft, "replSetSnapshot": cmdReplSetSnapshot,
		"dbHash": cmdDBHash, "dbhash": cmdDBHash, "mayflyReplPartition": cmdReplPartition,

		"listCommands": cmdListCommands,
		"bulkWrite":    cmdBulkWrite,
		"killOp":       cmdKillOp,
		"applyOps":     cmdApplyOps,
	} {
		register(t, name, run)
	}
	for name, run := range operationsCommands() {
		register(t, name, run)
	}
	registerAuth(t)
	return t
}
