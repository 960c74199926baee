// The shell's operator helpers against Mayfly: stats, serverStatus,
// fsyncLock, getLog, hostInfo. Run by integration/ops_clients_test.go.
function check(cond, what) {
  if (!cond) throw new Error("failed: " + what);
}

db.ops.drop();
db.ops.createIndex({ at: 1 }, { expireAfterSeconds: 3600 });
const docs = [];
for (let i = 0; i < 100; i++) docs.push({ _id: i, at: new Date(), pad: "x".repeat(50) });
db.ops.insertMany(docs);

const s = db.stats();
check(s.objects === 100 && s.collections === 1 && s.indexes === 2 && s.indexSize > 0, "db.stats() " + JSON.stringify(s));

const cs = db.ops.stats();
check(cs.count === 100 && cs.size > 100 * 50, "coll.stats() count/size " + JSON.stringify(cs));
check(cs.indexSizes.at_1 > 0 && cs.indexSizes._id_ > 0 && cs.totalIndexSize === cs.indexSizes.at_1 + cs.indexSizes._id_,
  "coll.stats() index sizes " + JSON.stringify(cs.indexSizes));
check(db.ops.countDocuments() === cs.count, "countDocuments agrees");

const ss = db.serverStatus();
check(ss.network.bytesIn > 0 && ss.network.numRequests > 0, "serverStatus().network");
check(ss.mem.resident > 0 && ss.opLatencies.writes.ops > 0, "serverStatus() mem/opLatencies");

check(db.fsyncLock().lockCount == 1, "fsyncLock");
check(db.fsyncUnlock().lockCount == 0, "fsyncUnlock");

const log = db.adminCommand({ getLog: "global" });
check(log.log.length > 0 && log.log.some(l => l.includes("mayfly listening")), "getLog global");
check(db.hostInfo().os.type === "Linux", "hostInfo().os");

print("mongosh ops ok");
