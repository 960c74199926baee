package router

// commandTable is every command the router answers, by name. A command
// not in it is refused with CommandNotFound, as mongos refuses one it
// does not know.
func commandTable() map[string]handlerFunc {
	table := map[string]handlerFunc{
		// The handshake and the connection.
		"hello": cmdHello, "isMaster": cmdHello, "ismaster": cmdHello,
		"ping": cmdOK, "serverStatus": cmdServerStatus, "buildInfo": cmdBuildInfo, "buildinfo": cmdBuildInfo,
		"getParameter": cmdGetParameter, "configureFailPoint": cmdConfigureFailPoint, "setParameter": cmdSetParameter, "whatsmyuri": cmdWhatsMyURI,
		"currentOp": cmdCurrentOp, "killOp": cmdKillOp, "fsync": cmdFsync, "fsyncUnlock": cmdFsyncUnlock,
		"profile": cmdProfile, "getLog": cmdGetLog, "getCmdLineOpts": cmdGetCmdLineOpts, "hostInfo": cmdHostInfo, "listCommands": cmdListCommands,
		"endSessions": cmdOK, "refreshSessions": cmdOK, "killSessions": cmdKillSessions, "killAllSessions": cmdKillSessions,

		// The cluster's administration (mongosh's sh.* helpers).
		"addShard": cmdAddShard, "listShards": cmdListShards, "removeShard": cmdRemoveShard,
		"enableSharding": cmdEnableSharding, "shardCollection": cmdShardCollection,
		"balancerStatus": cmdBalancerStatus, "balancerStart": cmdBalancerSwitch, "balancerStop": cmdBalancerSwitch,

		// Reads and cursors.
		"find": cmdFind, "aggregate": cmdAggregate, "count": cmdCount, "distinct": cmdDistinct,
		"getMore": cmdGetMore, "killCursors": cmdKillCursors,
		"listIndexes": cmdPrimaryCursor, "listCollections": cmdPrimaryCursor,
		// Atlas Search indexes: the primary shard answers as a mongod does.
		"createSearchIndexes": cmdPrimaryCursor, "updateSearchIndex": cmdPrimaryCursor,
		"dropSearchIndex": cmdPrimaryCursor, "listSearchIndexes": cmdPrimaryCursor,
		"listDatabases": cmdListDatabases, "dbStats": cmdDBStats, "dbstats": cmdDBStats, "explain": cmdExplain,
		"validate": cmdValidate,

		// Writes.
		"insert": cmdInsert, "update": cmdUpdate, "delete": cmdDelete,
		"findAndModify": cmdFindAndModify, "findandmodify": cmdFindAndModify,
		"bulkWrite": cmdBulkWrite,

		// Collections and indexes, on every shard that holds them.
		"create": cmdCollectionDDL, "createIndexes": cmdCollectionDDL, "dropIndexes": cmdCollectionDDL,
		"collMod": cmdCollectionDDL, "renameCollection": cmdRenameCollection, "drop": cmdDrop, "dropDatabase": cmdDropDatabase,
	}
	for name, h := range migrationCommands() {
		table[name] = h
	}
	return table
}
