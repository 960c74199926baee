package commands

import "go.mongodb.org/mongo-driver/v2/bson"

// buildTable lists every command Mayfly answers. Names are matched
// exactly, with MongoDB's historical lower-case aliases.
func buildTable() map[string]command {
	t := map[string]command{}
	for name, run := range map[string]func(*Handler, *request) (bson.D, error){
		"hello": cmdHello, "isMaster": cmdHello, "ismaster": cmdHello,
		"ping": cmdPing, "buildInfo": cmdBuildInfo, "buildinfo": cmdBuildInfo,
		"getParameter": cmdGetParameter, "setParameter": cmdSetParameter,
		"getLog": cmdGetLog, "getCmdLineOpts": cmdGetCmdLineOpts, "hostInfo": cmdHostInfo,
		"serverStatus": cmdServerStatus, "connectionStatus": cmdConnectionStatus,
		"whatsmyuri": cmdWhatsMyURI, "listDatabases": cmdListDatabases,
		"endSessions": cmdEmptyOK, "killSessions": cmdEmptyOK, "refreshSessions": cmdEmptyOK,
		"killAllSessions": cmdEmptyOK, "logout": cmdEmptyOK,
		"dropAllUsersFromDatabase": cmdDropAllUsers, "usersInfo": cmdUsersInfo,
		"listCollections": cmdListCollections, "create": cmdCreate, "drop": cmdDrop,
		"dropDatabase": cmdDropDatabase, "renameCollection": cmdRenameCollection,
		"createIndexes": cmdCreateIndexes, "listIndexes": cmdListIndexes,
		"dropIndexes": cmdDropIndexes, "deleteIndexes": cmdDropIndexes, "collMod": cmdCollMod,
		"insert": cmdInsert, "update": cmdUpdate, "delete": cmdDelete,
		"findAndModify": cmdFindAndModify, "findandmodify": cmdFindAndModify,
		"find": cmdFind, "getMore": cmdGetMore, "killCursors": cmdKillCursors,
		"count": cmdCount, "distinct": cmdDistinct, "aggregate": cmdAggregate,
		"profile": cmdProfile, "currentOp": cmdCurrentOp,
		"explain":  cmdExplain,
		"validate": cmdValidate,
		"killOp":   cmdKillOp,
	} {
		register(t, name, run)
	}
	return t
}
