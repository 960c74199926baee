package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/commands"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/expr/exprtest"
	"github.com/mayflydb/mayfly/internal/wire"
)

// The interruption table: one row per aggregation stage, per expression
// operator whose work grows with its input, and per command that loops
// over documents, each checked against the four ways an operation is
// ended — maxTimeMS, killOp, its client disconnecting, SIGTERM — and
// required to end within interruptBound of the trigger.
//
// Every row runs for far longer than 5 s uninterrupted, by design rather
// than by timing: a pipeline row multiplies its one seed document into
// 10^9 by three nested $unwind of 1000 elements, and no stage passes a
// document on in under a microsecond, so it would run 1000 s or more; a
// command row spends about 16 s on each document (hostileHeavyExpr), or
// builds or checks millions of index entries (createIndexes, validate:
// see arrayDocs).

const (
	interruptDB = "intr"
	// interruptBound is how long after its trigger an operation may
	// still run.
	interruptBound = time.Second
	// interruptGroup is how many rows run at once for the first three
	// triggers: enough to load both cores, few enough that each still
	// gets the CPU to notice its end promptly on a shared machine.
	interruptGroup = 2
	// bigN is the length of each field of the operator rows' input.
	bigN = 5000
)

type seedKind int

const (
	seedSmall   seedKind = iota // one document {_id: 1, n: 1}
	seedBig                     // one document of exprtest.Inputs(bigN)
	seedMany                    // manyDocs documents {_id: i, n: i}
	seedArrays                  // arrayDocs documents with an array of arrayLen
	seedIndexed                 // seedArrays with an index on the array
)

const (
	manyDocs  = 200
	arrayDocs = 100
	arrayLen  = 5000
)

// interruptRow is one operation of the table.
type interruptRow struct {
	name  string // the stage, operator or command it exercises
	seed  seedKind
	admin bool // the command runs against admin, not interruptDB
	// cmd is the command over coll, without maxTimeMS or comment.
	cmd func(coll string) bson.D
}

func stage(name string, arg any) bson.D { return bson.D{{Key: name, Value: arg}} }

// multiply turns each document into 10^9 by three nested $unwind.
func multiply() bson.A {
	var out bson.A
	for _, f := range []string{"m1", "m2", "m3"} {
		out = append(out,
			stage("$addFields", bson.D{{Key: f, Value: stage("$range", bson.A{0, 1000})}}),
			stage("$unwind", "$"+f))
	}
	return out
}

// never passes nothing on, so an aggregate's first batch waits for all
// of its input instead of answering after 101 documents.
func never() bson.D { return stage("$match", bson.D{{Key: "never", Value: true}}) }

func aggregateCmd(pipeline ...any) func(string) bson.D {
	return func(coll string) bson.D {
		return bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: bson.A(pipeline)}, {Key: "cursor", Value: bson.D{}}}
	}
}

// stageRow is a pipeline over the multiplied small seed with s between
// the multiplier and never.
func stageRow(name string, s ...any) interruptRow {
	p := append(multiply(), s...)
	return interruptRow{name: name, seed: seedSmall, cmd: aggregateCmd(append(p, never())...)}
}

// stageRows has a row for every stage of aggregate.StageNames that is
// not in constantStages.
func stageRows(small func(string) string) []interruptRow {
	return []interruptRow{
		stageRow("$match", stage("$match", bson.D{{Key: "$expr", Value: stage("$gte", bson.A{"$m3", 0})}})),
		stageRow("$project", stage("$project", bson.D{{Key: "m3", Value: 1}})),
		stageRow("$addFields", stage("$addFields", bson.D{{Key: "x", Value: "$m3"}})),
		stageRow("$set", stage("$set", bson.D{{Key: "x", Value: "$m3"}})),
		stageRow("$unset", stage("$unset", "m1")),
		// top-k: the $limit holds the sort's memory to 10 documents.
		stageRow("$sort", stage("$sort", bson.D{{Key: "m3", Value: -1}}), stage("$limit", 10)),
		stageRow("$skip", stage("$skip", int64(1)<<62)),
		stageRow("$limit", stage("$limit", int64(1)<<62)),
		stageRow("$group", stage("$group", bson.D{{Key: "_id", Value: "$m3"}, {Key: "n", Value: stage("$sum", 1)}})),
		stageRow("$count", stage("$count", "n")),
		stageRow("$sortByCount", stage("$sortByCount", "$m3")),
		stageRow("$unwind", stage("$addFields", bson.D{{Key: "u", Value: bson.A{1, 2, 3}}}), stage("$unwind", "$u")),
		{name: "$lookup", seed: seedSmall, cmd: func(coll string) bson.D {
			return aggregateCmd(append(multiply(), stage("$lookup", bson.D{
				{Key: "from", Value: small(coll)}, {Key: "localField", Value: "m3"}, {Key: "foreignField", Value: "n"}, {Key: "as", Value: "j"}}), never())...)(coll)
		}},
		stageRow("$replaceRoot", stage("$replaceRoot", bson.D{{Key: "newRoot", Value: bson.D{{Key: "x", Value: "$m3"}}}})),
		stageRow("$replaceWith", stage("$replaceWith", bson.D{{Key: "x", Value: "$m3"}})),
		stageRow("$bucket", stage("$bucket", bson.D{{Key: "groupBy", Value: "$m3"}, {Key: "boundaries", Value: bson.A{0, 500, 1000}}})),
		stageRow("$sample", stage("$sample", bson.D{{Key: "size", Value: 10}})),
		// $facet holds its input, so the multiplier runs inside it.
		{name: "$facet", seed: seedSmall, cmd: aggregateCmd(stage("$facet", bson.D{{Key: "f", Value: append(multiply(), never())}}))},
		{name: "$unionWith", seed: seedSmall, cmd: func(coll string) bson.D {
			return aggregateCmd(stage("$unionWith", bson.D{{Key: "coll", Value: small(coll)}, {Key: "pipeline", Value: multiply()}}), never())(coll)
		}},
		{name: "$documents", seed: seedSmall, cmd: func(string) bson.D {
			p := append(bson.A{stage("$documents", bson.A{bson.D{{Key: "n", Value: 1}}})}, multiply()...)
			cmd := aggregateCmd(append(p, never())...)("")
			cmd[0].Value = 1 // collectionless
			return cmd
		}},
	}
}

// constantStages are the stages whose work cannot grow with the data.
var constantStages = map[string]string{
	"$collStats":         "one document of the collection's statistics",
	"$listLocalSessions": "refused on a collection; collectionless it lists this server's sessions, which its session cache bounds",
}

// operatorRows has a row for every looping operator: the operator on
// each of the big seed's 10^9 copies.
func operatorRows() []interruptRow {
	var rows []interruptRow
	for name, row := range exprtest.LoopingOperators(bigN) {
		p := append(multiply(), stage("$project", bson.D{{Key: "x", Value: row.Spec}}), never())
		rows = append(rows, interruptRow{name: name, seed: seedBig, cmd: aggregateCmd(p...)})
	}
	return rows
}

// hostileHeavyExpr costs about 16 s on one document: 20 million
// multiplications in a $reduce over a $map.
func hostileHeavyExpr() bson.D {
	return heavyPipeline()[0].(bson.D)[0].Value.(bson.D)[0].Value.(bson.D)
}

// commandRows are the commands that loop over documents.
func commandRows() []interruptRow {
	heavyFilter := bson.D{{Key: "$expr", Value: stage("$lt", bson.A{hostileHeavyExpr(), 0})}}
	return []interruptRow{
		{name: "find", seed: seedSmall, cmd: func(coll string) bson.D {
			return bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: heavyFilter}}
		}},
		{name: "update", seed: seedMany, cmd: func(coll string) bson.D {
			u := bson.A{stage("$set", bson.D{{Key: "x", Value: hostileHeavyExpr()}})}
			return bson.D{{Key: "update", Value: coll}, {Key: "updates", Value: bson.A{bson.D{
				{Key: "q", Value: bson.D{}}, {Key: "u", Value: u}, {Key: "multi", Value: true}}}}}
		}},
		{name: "delete", seed: seedMany, cmd: func(coll string) bson.D {
			return bson.D{{Key: "delete", Value: coll}, {Key: "deletes", Value: bson.A{bson.D{
				{Key: "q", Value: heavyFilter}, {Key: "limit", Value: 0}}}}}
		}},
		{name: "createIndexes", seed: seedArrays, cmd: func(coll string) bson.D {
			var ixs bson.A
			for i := range 8 {
				ixs = append(ixs, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: fmt.Sprintf("k%d", i), Value: 1}}}, {Key: "name", Value: fmt.Sprintf("a_k%d", i)}})
			}
			return bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: ixs}}
		}},
		{name: "validate", seed: seedIndexed, cmd: func(coll string) bson.D {
			return bson.D{{Key: "validate", Value: coll}, {Key: "full", Value: true}}
		}},
		{name: "count", seed: seedSmall, cmd: func(coll string) bson.D {
			return bson.D{{Key: "count", Value: coll}, {Key: "query", Value: heavyFilter}}
		}},
		{name: "distinct", seed: seedSmall, cmd: func(coll string) bson.D {
			return bson.D{{Key: "distinct", Value: coll}, {Key: "key", Value: "n"}, {Key: "query", Value: heavyFilter}}
		}},
		{name: "findAndModify", seed: seedSmall, cmd: func(coll string) bson.D {
			return bson.D{{Key: "findAndModify", Value: coll}, {Key: "query", Value: heavyFilter}, {Key: "remove", Value: true}}
		}},
		{name: "explain", seed: seedSmall, cmd: func(coll string) bson.D {
			find := bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: heavyFilter}}
			return bson.D{{Key: "explain", Value: find}, {Key: "verbosity", Value: "executionStats"}}
		}},
		{name: "bulkWrite", seed: seedMany, admin: true, cmd: func(coll string) bson.D {
			u := bson.A{stage("$set", bson.D{{Key: "x", Value: hostileHeavyExpr()}})}
			return bson.D{{Key: "bulkWrite", Value: 1}, {Key: "ops", Value: bson.A{bson.D{
				{Key: "update", Value: 0}, {Key: "filter", Value: bson.D{}}, {Key: "updateMods", Value: u}, {Key: "multi", Value: true}}}},
				{Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: interruptDB + "." + coll}}}}}
		}},
	}
}

func (r interruptRow) db() string {
	if r.admin {
		return "admin"
	}
	return interruptDB
}

// interruptRows is the whole table; each row's collection is r<i>, and
// a row that reads a second collection reads s<i>.
func interruptRows() []interruptRow {
	rows := stageRows(func(coll string) string { return "s" + coll[1:] })
	rows = append(rows, operatorRows()...)
	return append(rows, commandRows()...)
}

// TestInterruptTableCoversEveryStageAndOperator: every registered stage
// and operator has a row or a stated reason why its work cannot grow.
func TestInterruptTableCoversEveryStageAndOperator(t *testing.T) {
	named := map[string]bool{}
	for _, r := range interruptRows() {
		named[r.name] = true
	}
	for _, s := range aggregate.StageNames() {
		if _, constant := constantStages[s]; named[s] == constant {
			t.Errorf("stage %s: row %v, constant %v; it must be exactly one", s, named[s], constant)
		}
	}
	constantOps := exprtest.ConstantOperators()
	for _, op := range expr.OperatorNames() {
		if _, constant := constantOps[op]; named[op] == constant {
			t.Errorf("operator %s: row %v, constant %v; it must be exactly one", op, named[op], constant)
		}
	}
}

// commandsOutsideTheTable are the commands of the registry that are not
// rows of the table, each with why: its work cannot grow with the data
// it reads, or its loop is too fast to outlast a trigger here and a unit
// test ends it with a cancelled context instead.
func commandsOutsideTheTable() map[string]string {
	out := map[string]string{}
	for why, names := range map[string][]string{
		"answers from memory, a counter or the catalog, whatever the data holds": {
			"hello", "isMaster", "ping", "buildInfo", "getParameter", "setParameter", "getLog", "getCmdLineOpts",
			"hostInfo", "serverStatus", "whatsmyuri", "listCommands", "currentOp", "killOp", "profile", "top",
			"collStats", "dbStats", "listDatabases", "listCollections", "listIndexes", "create", "configureFailPoint",
			"endSessions", "refreshSessions", "killSessions", "killAllSessions", "killCursors",
			"createSearchIndexes", "dropSearchIndex", "updateSearchIndex", "listSearchIndexes",
			"replSetGetStatus", "replSetGetConfig", "replSetFreeze", "mayflyReplPartition",
			"_recvChunkStatus", "_configsvrBalancerStatus",
		},
		"users and roles: bounded by the users and roles defined, not by the data": {
			"saslStart", "saslContinue", "authenticate", "logout", "connectionStatus", "usersInfo", "rolesInfo",
			"createUser", "updateUser", "dropUser", "dropAllUsersFromDatabase", "grantRolesToUser", "revokeRolesFromUser",
			"createRole", "updateRole", "dropRole", "dropAllRolesFromDatabase", "grantPrivilegesToRole",
			"revokePrivilegesFromRole", "grantRolesToRole", "revokeRolesFromRole",
		},
		"one range deletion per collection or index, whatever it holds":                                 {"drop", "dropDatabase", "dropIndexes"},
		"bounded by one message (48 MB) or one transaction's writes":                                    {"insert", "applyOps", "commitTransaction", "abortTransaction"},
		"bounded: a rename moves a catalog entry, and copies at most 16 MiB of events across databases": {"renameCollection"},
		"flushes the engine's memory tables, bounded by their size":                                     {"fsync", "fsyncUnlock", "mayflyCheckpoint"},
		"waits, and its wait ends with its context: a migration the donor runs in the background (Migrations.MoveRange), a stepdown's catch-up": {
			"_shardsvrMoveRange", "replSetStepDown",
		},
		"a replica set's or a migration's step, bounded by one batch or one raft message": {
			"replSetInitiate", "replSetReconfig", "replSetRaft", "replSetSnapshot", "_recvChunkStart", "_recvChunkCommit", "_recvChunkReleaseCritSec", "_recvChunkAbort",
			"_migrateClone", "_transferMods", "_getNextSessionMods", "_flushRoutingTableCacheUpdates",
			"_configsvrCommitChunkMigration", "_configsvrCommitChunkSplit", "_shardsvrMoveDocument",
			"_shardsvrDropCollectionParticipant", "_shardsvrDropDatabaseParticipant",
		},
		"the stage and operator rows: aggregate runs them":                                           {"aggregate"},
		"continues the loop of a find or aggregate row: TestGetMoreInterrupted":                      {"getMore"},
		"a loop too fast to outlast a trigger here: diag.TestDBHashStopsWithItsContext":              {"dbHash"},
		"a loop too fast to outlast a trigger here: diag.TestMeasureStopsWithItsContext":             {"dataSize"},
		"a loop too fast to outlast a trigger here: docstore.TestIndexDuplicatesStopsWithItsContext": {"collMod"},
	} {
		for _, name := range names {
			out[name] = why
		}
	}
	return out
}

// commandAliases are the registry's other spellings of a command.
var commandAliases = map[string]string{
	"ismaster": "isMaster", "buildinfo": "buildInfo", "findandmodify": "findAndModify", "dbhash": "dbHash",
	"deleteIndexes": "dropIndexes", "collstats": "collStats", "dbstats": "dbStats", "datasize": "dataSize",
}

// TestInterruptTableCoversEveryCommand: every command of the registry
// (commands.Names) is exactly one of a row and a command named outside
// the table, with its reason.
func TestInterruptTableCoversEveryCommand(t *testing.T) {
	named := map[string]bool{}
	for _, r := range commandRows() {
		named[r.name] = true
	}
	outside := commandsOutsideTheTable()
	for _, name := range commands.Names() {
		if canonical, ok := commandAliases[name]; ok {
			name = canonical
		}
		if _, why := outside[name]; named[name] == why {
			t.Errorf("command %s: row %v, outside the table %v; it must be exactly one", name, named[name], why)
		}
	}
}

func rowColl(i int) string  { return fmt.Sprintf("r%d", i) }
func sideColl(i int) string { return fmt.Sprintf("s%d", i) }

// seedRows gives each row its collections.
func seedRows(t *testing.T, db *mongo.Database, rows []interruptRow) {
	t.Helper()
	for i, r := range rows {
		seedColl(t, db.Collection(rowColl(i)), r.seed)
		seedColl(t, db.Collection(sideColl(i)), seedSmall)
	}
}

func seedColl(t *testing.T, c *mongo.Collection, kind seedKind) {
	t.Helper()
	ctx := ctxT(t)
	var docs []any
	switch kind {
	case seedSmall:
		docs = []any{bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 1}}}
	case seedBig:
		docs = []any{append(bson.D{{Key: "_id", Value: 1}}, exprtest.Inputs(bigN)...)}
	case seedMany:
		for i := range manyDocs {
			docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: i}})
		}
	case seedArrays, seedIndexed:
		docs = arrayDocuments()
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if kind == seedIndexed { // built over the documents: faster than kept on insert
		if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
}

// arrayDocuments each hold an array of arrayLen distinct numbers, so an
// index on it has arrayDocs*arrayLen entries.
func arrayDocuments() []any {
	docs := make([]any, arrayDocs)
	for i := range docs {
		a := make(bson.A, arrayLen)
		for j := range a {
			a[j] = int32(i*arrayLen + j)
		}
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "a", Value: a}}
	}
	return docs
}

// rowCommand is row i's command, marked with its comment.
func rowCommand(rows []interruptRow, i int) bson.D {
	return append(rows[i].cmd(rowColl(i)), bson.E{Key: "comment", Value: rowComment(i)})
}

func rowComment(i int) string { return fmt.Sprintf("interrupt-row-%d", i) }

// runningOp is a row's operation as currentOp shows it.
type runningOp struct {
	opid int32
	// started is when the server began it, by this machine's clock: the
	// time currentOp's reply came less how long the operation had run.
	// The server may have begun it up to currentOp's round trip earlier,
	// which the test cannot tell apart; on a busy machine that round trip
	// is the larger error, so the later bound is taken.
	started time.Time
}

// runningRows maps each row comment in currentOp to its operation.
func runningRows(t *testing.T, admin *mongo.Database) map[string]runningOp {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var reply bson.D
	if err := admin.RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}}).Decode(&reply); err != nil {
		t.Fatalf("currentOp: %v", err)
	}
	replied := time.Now()
	out := map[string]runningOp{}
	for _, op := range field(t, reply, "inprog").(bson.A) {
		d := op.(bson.D)
		cmd, _ := valueOf(d, "command").(bson.D)
		if c, ok := valueOf(cmd, "comment").(string); ok {
			opid, _ := valueOf(d, "opid").(int32)
			micros, _ := valueOf(d, "microsecs_running").(int64)
			out[c] = runningOp{opid: opid, started: replied.Add(-time.Duration(micros) * time.Microsecond)}
		}
	}
	return out
}

func valueOf(d bson.D, key string) any {
	v, _ := lookupD(d, key)
	return v
}

// waitRunning waits up to 30 s for every one of rows idx to show in
// currentOp and returns their operations.
func waitRunning(t *testing.T, admin *mongo.Database, idx []int) map[int]runningOp {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		running := runningRows(t, admin)
		out := map[int]runningOp{}
		for _, i := range idx {
			if id, ok := running[rowComment(i)]; ok {
				out[i] = id
			}
		}
		if len(out) == len(idx) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d rows showed in currentOp within 30 s", len(out), len(idx))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rowResult is how one row's command ended.
type rowResult struct {
	err error
	at  time.Time
}

// startRows sends each row's command (with extra fields) on client and
// returns where their results arrive.
func startRows(client *mongo.Client, rows []interruptRow, idx []int, extra ...bson.E) map[int]chan rowResult {
	out := map[int]chan rowResult{}
	for _, i := range idx {
		ch := make(chan rowResult, 1)
		out[i] = ch
		cmd := append(rowCommand(rows, i), extra...)
		go func() {
			err := client.Database(rows[i].db()).RunCommand(context.Background(), cmd).Err()
			ch <- rowResult{err: err, at: time.Now()}
		}()
	}
	return out
}

// latencies records each row's trigger-to-end time.
type latencies struct {
	mu    sync.Mutex
	worst time.Duration
	row   string
}

func (l *latencies) note(row string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d > l.worst {
		l.worst, l.row = d, row
	}
}

// wantEnded waits for a row's result and requires code within bound of
// trigger.
func wantEnded(t *testing.T, name string, ch chan rowResult, trigger time.Time, code int, lat *latencies) {
	t.Helper()
	select {
	case res := <-ch:
		// A top-level error, as mongod fails a whole command, writes
		// included, with an interruption; not a write error.
		var ce mongo.CommandError
		if !errors.As(res.err, &ce) || ce.Code != int32(code) {
			t.Errorf("%s: ended with %v, want the command's error %d", name, res.err, code)
			return
		}
		took := res.at.Sub(trigger)
		lat.note(name, took)
		if took > interruptBound {
			t.Errorf("%s: ended %v after its trigger", name, took)
		}
	case <-time.After(interruptBound + 5*time.Second):
		t.Errorf("%s: still running %v after its trigger", name, interruptBound+5*time.Second)
	}
}

func groups(n, size int) [][]int {
	var out [][]int
	for i := 0; i < n; i += size {
		var g []int
		for j := i; j < min(i+size, n); j++ {
			g = append(g, j)
		}
		out = append(out, g)
	}
	return out
}

// TestHostileInterruptTable: against one server process, every row ends
// within interruptBound of maxTimeMS (50), killOp (11601) and its client
// disconnecting, in groups of interruptGroup rows at a time; then, with
// every row running at once, SIGTERM interrupts them all (11600, or the
// connection closing under them) and the process exits 0 within 10 s.
func TestHostileInterruptTable(t *testing.T) {
	began := time.Now()
	p, err := startMayfly(t, buildBinary(t), t.TempDir(), freePort(t))
	if err != nil {
		t.Fatal(err)
	}
	client := wideClient(t, p.addr, 2)
	admin := client.Database("admin")
	rows := interruptRows()
	t.Logf("built and started in %v", time.Since(began).Round(time.Millisecond))
	seeding := time.Now()
	seedRows(t, client.Database(interruptDB), rows)
	t.Logf("seeded in %v", time.Since(seeding).Round(time.Millisecond))
	// The rows have their own client, whose pool opens connections for
	// all at once; currentOp and killOp keep to client's.
	rowsClient := wideClient(t, p.addr, len(rows))
	var maxTime, kill, disconnect latencies
	for _, g := range groups(len(rows), interruptGroup) {
		interruptByMaxTime(t, rowsClient, admin, rows, g, &maxTime)
		interruptByKillOp(t, rowsClient, admin, rows, g, &kill)
		interruptByDisconnect(t, p.addr, admin, rows, g, &disconnect)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d rows in %v; worst trigger-to-end: maxTimeMS %v (%s), killOp %v (%s), disconnect %v (%s)", len(rows), time.Since(seeding).Round(time.Millisecond),
		maxTime.worst.Round(time.Millisecond), maxTime.row, kill.worst.Round(time.Millisecond), kill.row,
		disconnect.worst.Round(time.Millisecond), disconnect.row)
	interruptBySigterm(t, p, rowsClient, admin, rows)
}

// interruptMaxTimeMS leaves time for every row of a group to show in
// currentOp, which tells when the server started each, before any
// deadline passes.
const interruptMaxTimeMS = 2000

// interruptByMaxTime requires each row to answer 50 within
// interruptBound of its deadline: the time the server started it (as
// currentOp shows) plus maxTimeMS, so that waiting for a connection
// before the command reached the server is not counted.
func interruptByMaxTime(t *testing.T, rowsClient *mongo.Client, admin *mongo.Database, rows []interruptRow, idx []int, lat *latencies) {
	results := startRows(rowsClient, rows, idx, bson.E{Key: "maxTimeMS", Value: interruptMaxTimeMS})
	ops := waitRunning(t, admin, idx)
	for _, i := range idx {
		deadline := ops[i].started.Add(interruptMaxTimeMS * time.Millisecond)
		wantEnded(t, "maxTimeMS "+rows[i].name, results[i], deadline, 50, lat)
	}
}

func interruptByKillOp(t *testing.T, rowsClient *mongo.Client, admin *mongo.Database, rows []interruptRow, idx []int, lat *latencies) {
	results := startRows(rowsClient, rows, idx)
	ops := waitRunning(t, admin, idx)
	killed := map[int]time.Time{}
	for _, i := range idx {
		killed[i] = time.Now()
		runCmd(t, admin, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: ops[i].opid}})
	}
	for _, i := range idx {
		wantEnded(t, "killOp "+rows[i].name, results[i], killed[i], 11601, lat)
	}
}

// interruptByDisconnect sends each row on a raw connection, closes them
// all once every row runs, and requires each gone from currentOp within
// interruptBound.
func interruptByDisconnect(t *testing.T, addr string, admin *mongo.Database, rows []interruptRow, idx []int, lat *latencies) {
	conns := map[int]net.Conn{}
	for _, i := range idx {
		nc := dialRaw(t, addr)
		cmd := append(rowCommand(rows, i), bson.E{Key: "$db", Value: rows[i].db()})
		if _, err := nc.Write(wire.AppendMsg(nil, 1, 0, 0, docBytes(t, cmd))); err != nil {
			t.Fatal(err)
		}
		conns[i] = nc
	}
	waitRunning(t, admin, idx)
	time.Sleep(200 * time.Millisecond) // past the server's watch delay
	closed := time.Now()
	for _, i := range idx {
		conns[i].Close()
	}
	left := slices.Clone(idx)
	for len(left) > 0 && time.Since(closed) < interruptBound+5*time.Second {
		running := runningRows(t, admin)
		left = slices.DeleteFunc(left, func(i int) bool {
			_, still := running[rowComment(i)]
			if !still {
				lat.note(rows[i].name, time.Since(closed))
			}
			return !still
		})
		time.Sleep(10 * time.Millisecond)
	}
	for _, i := range left {
		t.Errorf("disconnect %s: still running %v after its client left", rows[i].name, time.Since(closed))
	}
	if lat.worst > interruptBound {
		t.Errorf("disconnect %s: gone only %v after its client left", lat.row, lat.worst)
	}
}

// wideClient is a client that opens up to n connections at once. Its
// disconnect is bounded: the server is gone by then, and the driver would
// otherwise wait a server selection timeout to end its sessions.
func wideClient(t *testing.T, addr string, n int) *mongo.Client {
	t.Helper()
	uri := fmt.Sprintf("mongodb://%s/?directConnection=true&retryWrites=false&retryReads=false", addr)
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetMaxPoolSize(uint64(n + 10)).SetMaxConnecting(uint64(n)).
		SetTimeout(time.Minute).SetServerSelectionTimeout(time.Minute).SetConnectTimeout(time.Minute))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Disconnect(ctx)
	})
	return c
}

// interruptBySigterm starts every row at once, sends SIGTERM, and
// requires each to end (11600, or its connection closed) and the process
// to exit 0 within 10 s. With every row running on two cores, an
// operation's share of the CPU is a fortieth or less, so the time it takes
// to reach its next look at the guard (a document of validate's, up to
// 5 000 index keys) stretches by as much: the bound here is the process's.
func interruptBySigterm(t *testing.T, p *process, rowsClient *mongo.Client, admin *mongo.Database, rows []interruptRow) {
	all := make([]int, len(rows))
	for i := range all {
		all[i] = i
	}
	starting := time.Now()
	results := startRows(rowsClient, rows, all)
	waitRunning(t, admin, all)
	t.Logf("all %d rows running %v after they were sent", len(rows), time.Since(starting).Round(time.Millisecond))
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	var lat latencies
	for _, i := range all {
		select {
		case res := <-results[i]:
			lat.note(rows[i].name, res.at.Sub(start))
			var se mongo.ServerError
			if res.err == nil || (errors.As(res.err, &se) && !se.HasErrorCode(11600)) {
				t.Errorf("%s: ended with %v, want 11600 or the connection closed", rows[i].name, res.err)
			}
		case <-time.After(time.Until(start.Add(10 * time.Second))):
			t.Fatalf("%s: no answer 10 s after SIGTERM", rows[i].name)
		}
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(10*time.Second - time.Since(start)):
		t.Fatal("no exit within 10 s of SIGTERM")
	}
	t.Logf("%d rows at once; SIGTERM to exit 0: %v; worst SIGTERM to an operation's end: %v (%s)",
		len(rows), time.Since(start).Round(time.Millisecond), lat.worst.Round(time.Millisecond), lat.row)
}

// TestGetMoreInterrupted: a getMore runs its cursor's loop again, and
// ends with its own maxTimeMS and with killOp as the command that opened
// the cursor would: a find of one document whose filter costs about 16 s
// answers an empty first batch at once (batchSize 0), then each getMore
// is interrupted within interruptBound.
func TestGetMoreInterrupted(t *testing.T) {
	p, err := startMayfly(t, buildBinary(t), t.TempDir(), freePort(t))
	if err != nil {
		t.Fatal(err)
	}
	client := wideClient(t, p.addr, 4)
	db := client.Database(interruptDB)
	seedColl(t, db.Collection("g"), seedSmall)
	heavyFilter := bson.D{{Key: "$expr", Value: stage("$lt", bson.A{hostileHeavyExpr(), 0})}}
	for _, trigger := range []string{"maxTimeMS", "killOp"} {
		t.Run(trigger, func(t *testing.T) {
			sess, err := client.StartSession()
			if err != nil {
				t.Fatal(err)
			}
			defer sess.EndSession(context.Background())
			ctx := mongo.NewSessionContext(context.Background(), sess)
			var opened struct {
				Cursor struct {
					ID int64 `bson:"id"`
				} `bson:"cursor"`
			}
			find := bson.D{{Key: "find", Value: "g"}, {Key: "filter", Value: heavyFilter}, {Key: "batchSize", Value: 0}}
			if err := db.RunCommand(ctx, find).Decode(&opened); err != nil || opened.Cursor.ID == 0 {
				t.Fatalf("find: cursor %d, %v", opened.Cursor.ID, err)
			}
			getMore := bson.D{{Key: "getMore", Value: opened.Cursor.ID}, {Key: "collection", Value: "g"},
				{Key: "comment", Value: "interrupt-getmore"}}
			var trig time.Time
			code := int32(50)
			done := make(chan error, 1)
			if trigger == "maxTimeMS" {
				getMore = append(getMore, bson.E{Key: "maxTimeMS", Value: 500})
				trig = time.Now().Add(500 * time.Millisecond)
				go func() { done <- db.RunCommand(ctx, getMore).Err() }()
			} else {
				code = 11601
				go func() { done <- db.RunCommand(ctx, getMore).Err() }()
				trig = killByComment(t, client.Database("admin"), "interrupt-getmore")
			}
			select {
			case err := <-done:
				var ce mongo.CommandError
				if !errors.As(err, &ce) || ce.Code != code {
					t.Fatalf("getMore ended with %v, want %d", err, code)
				}
				if took := time.Since(trig); took > interruptBound {
					t.Fatalf("getMore ended %v after its trigger", took)
				}
			case <-time.After(interruptBound + 5*time.Second):
				t.Fatalf("getMore still running %v after its trigger", interruptBound+5*time.Second)
			}
		})
	}
}

// killByComment waits for the operation with comment to run, kills it,
// and returns when.
func killByComment(t *testing.T, admin *mongo.Database, comment string) time.Time {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var res struct {
			InProg []struct {
				OpID    int32  `bson:"opid"`
				Command bson.M `bson:"command"`
			} `bson:"inprog"`
		}
		if err := admin.RunCommand(context.Background(), bson.D{{Key: "currentOp", Value: 1}}).Decode(&res); err != nil {
			t.Fatal(err)
		}
		for _, op := range res.InProg {
			if op.Command["comment"] == comment {
				at := time.Now()
				if err := admin.RunCommand(context.Background(), bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: op.OpID}}).Err(); err != nil {
					t.Fatal(err)
				}
				return at
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no operation with comment %q ran within 10 s", comment)
	return time.Time{}
}

// TestHostileGuardedCursorGetMore: a pipeline's guard outlives the
// command that opened its cursor (whose context ends when it returns), so
// each getMore runs the stages and expressions again under its own.
func TestHostileGuardedCursorGetMore(t *testing.T) {
	db := connect(t, startServer(t, app.Config{})).Database("test")
	var docs []any
	for i := range 10 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: bson.A{i, i + 1}}})
	}
	if _, err := db.Collection("c").InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	pipeline := bson.A{
		stage("$unwind", "$a"),
		stage("$addFields", bson.D{{Key: "s", Value: stage("$sum", bson.A{"$a", stage("$size", stage("$range", bson.A{0, "$a"}))})}}),
	}
	cur, err := db.Collection("c").Aggregate(ctxT(t), pipeline, options.Aggregate().SetBatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.D
	if err := cur.All(ctxT(t), &out); err != nil {
		t.Fatalf("after %d documents: %v", len(out), err)
	}
	if len(out) != 20 {
		t.Fatalf("%d documents, want 20", len(out))
	}
}
