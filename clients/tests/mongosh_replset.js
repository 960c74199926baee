// Run by integration/replset_clients_test.go with HOSTS (three members
// started with --replSet rs0, not initiated) and EXTRA (a fourth) defined:
// what a user types to make and run a replica set.
function check(cond, what) {
  if (!cond) { throw new Error("check failed: " + what); }
}

// A read before the set exists is refused, as mongod refuses it (13436
// with the direct connection's primaryPreferred), and the refusal must not
// keep the member from being selected for the rs.initiate typed next: the
// driver marks a member Unknown on such an error unless the reply's
// topologyVersion shows it stale, and its monitor, once it streams
// (about 0.5 s after connecting), only looks again when its awaitable
// hello returns, up to 10 s later; mongosh selects for 2 s on localhost.
// mongosh's own startup countDocuments on admin.atlascli, run beside the
// script, failed rs.initiate so in loaded CI runs whenever it was answered
// after the monitor began streaming: "MongoServerSelectionError: node is
// not in primary or recovering state". The sleep makes that order certain.
sleep(1500);
let refused = null;
try { db.getSiblingDB("admin").atlascli.countDocuments({}); } catch (e) { refused = e; }
check(refused !== null && refused.code === 13436, "read before rs.initiate: " + refused);

const cfg = { _id: "rs0", members: HOSTS.map((h, i) => ({ _id: i, host: h })) };
const init = rs.initiate(cfg);
check(init.ok === 1, EJSON.stringify(init));

function primaryOf() {
  for (let i = 0; i < 200; i++) {
    const st = rs.status();
    const p = st.members.filter((m) => m.stateStr === "PRIMARY");
    if (p.length === 1) return p[0].name;
    sleep(100);
  }
  throw new Error("no primary: " + EJSON.stringify(rs.status()));
}
const first = primaryOf();
check(rs.conf().members.length === 3, "rs.conf().members.length");
check(rs.conf()._id === "rs0", "rs.conf()._id");

const set = new Mongo("mongodb://" + HOSTS.join(",") + "/?replicaSet=rs0");
const test = set.getDB("test");
test.carts.createIndex({ lastModified: 1 }, { expireAfterSeconds: 3600 });
test.carts.insertOne({ _id: 1, lastModified: new Date(), items: ["a"] });
check(test.carts.countDocuments() === 1, "test.carts.countDocuments()");

// rs.* as the primary sees them.
db = set.getDB("admin");
const added = rs.add(EXTRA);
check(added.ok === 1, EJSON.stringify(added));
check(rs.conf().members.length === 4, "rs.conf().members.length");
for (let i = 0; i < 200; i++) {
  const m = rs.status().members.find((x) => x.name === EXTRA);
  if (m && m.stateStr === "SECONDARY") break;
  sleep(100);
}
const extra = new Mongo("mongodb://" + EXTRA + "/?directConnection=true");
extra.setReadPref("secondaryPreferred");
for (let i = 0; i < 100 && extra.getDB("test").carts.countDocuments() !== 1; i++) sleep(100);
check(extra.getDB("test").carts.countDocuments() === 1, "extra.getDB('test').carts.countDocuments()");

const down = rs.stepDown(30, 10);
check(down.ok === 1, EJSON.stringify(down));
let second = first;
for (let i = 0; i < 200 && second === first; i++) {
  sleep(100);
  try { second = primaryOf(); } catch (e) { /* an election is under way */ }
}
check(second !== first, "stepDown did not hand over");
test.carts.updateOne({ _id: 1 }, { $set: { lastModified: new Date() } });
check(test.carts.findOne({ _id: 1 }).items.length === 1, "test.carts.findOne({ _id: 1 }).items.length");

// The oplog's window and the members' lag, as an operator checks them,
// and the oplog's entries, newest first, as tools read them.
const window = rs.printReplicationInfo().value;
check(window["log length start to end"] !== undefined && window["configured oplog size"] !== undefined, "rs.printReplicationInfo(): " + EJSON.stringify(window));
const lag = rs.printSecondaryReplicationInfo().value;
check(Object.keys(lag).filter((k) => k.startsWith("source: ")).length === 3, "rs.printSecondaryReplicationInfo(): " + EJSON.stringify(lag));
const local = set.getDB("local");
const last = local.oplog.rs.find().sort({ $natural: -1 }).limit(1).next();
check(last.op === "u" && last.ns === "test.carts" && last.o2._id === 1 && last.o.diff.u.lastModified instanceof Date, "newest oplog entry: " + EJSON.stringify(last));
check(local.oplog.rs.countDocuments({ op: "i", ns: "test.carts" }) === 1, "oplog inserts into test.carts");
check(local.oplog.rs.countDocuments({ ts: { $gte: last.ts } }) === 1 && local.oplog.rs.countDocuments({ ts: { $gt: last.ts } }) === 0, "oplog entries from the newest one's ts");
check(local.system.replset.findOne()._id === "rs0", "local.system.replset");
let readOnly = null;
try { local.oplog.rs.insertOne({ op: "n" }); } catch (e) { readOnly = e; }
check(readOnly !== null && readOnly.code === 73, "insert into local.oplog.rs: " + readOnly);
print("mongosh replset ok");
