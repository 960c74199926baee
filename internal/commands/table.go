package commands

import (
	"maps"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// handlerFunc runs one command: parse, authorize, call the layer below,
// build the reply.
type handlerFunc func(*Handler, *request) (bson.D, error)

// command is one row of the command table: its handler and what mongod
// records for it besides, so that everything a newcomer needs to know
// about a command is on one line.
type command struct {
	run handlerFunc
	// name is the command's own name, which an alias stands for: what
	// refusals and listCommands name, as mongod's do.
	name string
	// role is where a replica set member lets it run.
	role role
	// apiV1: the command is in MongoDB's Stable API version 1, so it runs
	// under apiStrict.
	apiV1 bool
	// adminOnly: mongod runs it only against the admin database.
	adminOnly bool
	// readConcern: a read that waits for its read concern.
	readConcern bool
}

// Where a replica set member lets a command run (see role).
var (
	// onPrimary: writes, taken only by the primary.
	onPrimary = role{secondary: neverOnSecondary}
	// optIn: reads a secondary serves when the read preference allows,
	// and a member not yet initiated answers (mongod's maintenanceOk).
	optIn = role{secondary: optInOnSecondary}
	// optInRead: reads of data, which also need a primary or secondary.
	optInRead = role{secondary: optInOnSecondary, needsPrimaryOrSecondary: true}
	// primaryOrSecondary: runs on either, never on a member in neither
	// state.
	primaryOrSecondary = role{needsPrimaryOrSecondary: true}
)

// A row without a role runs on any member: mongod's kAlways with
// maintenanceOk (hello, ping, replSet*, serverStatus, currentOp, ...).

// aliasOf maps MongoDB's historical spellings to the command they stand
// for; an alias shares its command's row.
var aliasOf = map[string]string{
	"ismaster": "isMaster", "buildinfo": "buildInfo", "findandmodify": "findAndModify",
	"dbhash": "dbHash", "deleteIndexes": "dropIndexes", "collstats": "collStats",
	"dbstats": "dbStats", "datasize": "dataSize",
}

// commandRows is the command table: every command Mayfly answers, with
// its handler, replica-set role and Stable API membership. Where each
// fact comes from in mongod's source is in docs/design/0007 (roles) and
// 0008 (API version 1).
func commandRows() map[string]command {
	return map[string]command{
		// The handshake, diagnostics and parameters.
		"hello":            {run: cmdHello, apiV1: true},
		"isMaster":         {run: cmdHello},
		"ping":             {run: cmdPing, apiV1: true},
		"buildInfo":        {run: cmdBuildInfo},
		"getParameter":     {run: cmdGetParameter, adminOnly: true},
		"setParameter":     {run: cmdSetParameter, adminOnly: true},
		"getLog":           {run: cmdGetLog, adminOnly: true},
		"getCmdLineOpts":   {run: cmdGetCmdLineOpts, adminOnly: true},
		"hostInfo":         {run: cmdHostInfo},
		"serverStatus":     {run: cmdServerStatus},
		"whatsmyuri":       {run: cmdWhatsMyURI},
		"listCommands":     {run: cmdListCommands},
		"currentOp":        {run: cmdCurrentOp, adminOnly: true},
		"killOp":           {run: cmdKillOp},
		"profile":          {run: cmdProfile},
		"collStats":        {run: cmdCollStats, role: primaryOrSecondary},
		"dbStats":          {run: cmdDBStats, role: primaryOrSecondary},
		"dataSize":         {run: cmdDataSize},
		"top":              {run: cmdTop},
		"fsync":            {run: cmdFsync},
		"fsyncUnlock":      {run: cmdFsyncUnlock},
		"mayflyCheckpoint": {run: cmdMayflyCheckpoint},
		"validate":         {run: cmdValidate, role: primaryOrSecondary, readConcern: true},
		"dbHash":           {run: cmdDBHash, role: primaryOrSecondary},

		// Logical sessions.
		"endSessions":     {run: cmdEndSessions, apiV1: true},
		"refreshSessions": {run: cmdRefreshSessions, apiV1: true},
		"killSessions":    {run: cmdKillSessions},
		"killAllSessions": {run: cmdKillAllSessions},

		// The catalog.
		"listDatabases":    {run: cmdListDatabases, role: optInRead, apiV1: true, adminOnly: true},
		"listCollections":  {run: cmdListCollections, role: optInRead, apiV1: true, readConcern: true},
		"listIndexes":      {run: cmdListIndexes, role: optInRead, apiV1: true, readConcern: true},
		"create":           {run: cmdCreate, role: onPrimary, apiV1: true},
		"drop":             {run: cmdDrop, role: onPrimary, apiV1: true},
		"dropDatabase":     {run: cmdDropDatabase, role: onPrimary, apiV1: true},
		"renameCollection": {run: cmdRenameCollection, role: onPrimary, adminOnly: true},
		"createIndexes":    {run: cmdCreateIndexes, role: onPrimary, apiV1: true},
		"dropIndexes":      {run: cmdDropIndexes, role: onPrimary, apiV1: true},
		"collMod":          {run: cmdCollMod, role: onPrimary, apiV1: true},

		// Atlas Search indexes, which live in mongot: refused (searchindex.go).
		"createSearchIndexes": {run: cmdSearchIndexes, role: onPrimary},
		"dropSearchIndex":     {run: cmdSearchIndexes, role: onPrimary},
		"updateSearchIndex":   {run: cmdSearchIndexes, role: onPrimary},
		"listSearchIndexes":   {run: cmdSearchIndexes, role: onPrimary},

		// Reads and writes.
		"find":          {run: cmdFind, role: optInRead, apiV1: true, readConcern: true},
		"getMore":       {run: cmdGetMore, role: primaryOrSecondary, apiV1: true},
		"killCursors":   {run: cmdKillCursors, role: primaryOrSecondary, apiV1: true},
		"count":         {run: cmdCount, role: optInRead, apiV1: true, readConcern: true},
		"distinct":      {run: cmdDistinct, role: optInRead, readConcern: true},
		"aggregate":     {run: cmdAggregate, role: optInRead, apiV1: true, readConcern: true},
		"explain":       {run: cmdExplain, role: optInRead, apiV1: true},
		"insert":        {run: cmdInsert, role: onPrimary, apiV1: true},
		"update":        {run: cmdUpdate, role: onPrimary, apiV1: true},
		"delete":        {run: cmdDelete, role: onPrimary, apiV1: true},
		"findAndModify": {run: cmdFindAndModify, role: onPrimary, apiV1: true},
		"bulkWrite":     {run: cmdBulkWrite, role: onPrimary, apiV1: true, adminOnly: true},
		"applyOps":      {run: cmdApplyOps, role: onPrimary},

		// Transactions (txn.go).
		"commitTransaction": {run: cmdCommitTransaction, role: onPrimary, apiV1: true, adminOnly: true},
		"abortTransaction":  {run: cmdAbortTransaction, role: onPrimary, apiV1: true, adminOnly: true},

		// Authentication and access control, answered by internal/auth.
		"saslStart":                {run: cmdAuth, apiV1: true},
		"saslContinue":             {run: cmdAuth, apiV1: true},
		"authenticate":             {run: cmdAuth, apiV1: true},
		"logout":                   {run: cmdAuth},
		"connectionStatus":         {run: cmdAuth},
		"usersInfo":                {run: cmdAuth, role: optIn},
		"rolesInfo":                {run: cmdAuth, role: optIn},
		"createUser":               {run: cmdAuth, role: onPrimary},
		"updateUser":               {run: cmdAuth, role: onPrimary},
		"dropUser":                 {run: cmdAuth, role: onPrimary},
		"dropAllUsersFromDatabase": {run: cmdAuth, role: onPrimary},
		"grantRolesToUser":         {run: cmdAuth, role: onPrimary},
		"revokeRolesFromUser":      {run: cmdAuth, role: onPrimary},
		"createRole":               {run: cmdAuth, role: onPrimary},
		"updateRole":               {run: cmdAuth, role: onPrimary},
		"dropRole":                 {run: cmdAuth, role: onPrimary},
		"dropAllRolesFromDatabase": {run: cmdAuth, role: onPrimary},
		"grantPrivilegesToRole":    {run: cmdAuth, role: onPrimary},
		"revokePrivilegesFromRole": {run: cmdAuth, role: onPrimary},
		"grantRolesToRole":         {run: cmdAuth, role: onPrimary},
		"revokeRolesFromRole":      {run: cmdAuth, role: onPrimary},
	}
}

// testCommandRows are the commands that exist only with
// enableTestCommands, as mongod's test-only commands.
func testCommandRows() map[string]command {
	return map[string]command{
		"configureFailPoint": {run: cmdConfigureFailPoint, adminOnly: true},
	}
}

// buildTable makes the lookup table: each row under its own name and
// under every alias of it.
func buildTable(testCommands bool) map[string]command {
	t := map[string]command{}
	add := func(rows map[string]command) {
		for name, row := range rows {
			row.name = name
			t[name] = row
		}
	}
	add(commandRows())
	add(replCommandRows())
	add(shardCommandRows())
	if testCommands {
		add(testCommandRows())
	}
	for alias, name := range aliasOf {
		t[alias] = t[name]
	}
	return t
}

// Names lists every command the server answers with test commands on,
// aliases included, sorted: the registry that tables over "every
// command" are checked against.
func Names() []string {
	return slices.Sorted(maps.Keys(buildTable(true)))
}

// isWrite reports whether a command changes data or the catalog: only a
// primary takes it, and it waits for its write concern.
func (h *Handler) isWrite(name string) bool {
	return h.table[name].role.secondary == neverOnSecondary
}
