// Run by integration/expiry_clients_test.go: mongosh <uri> --file mongosh_expiry.js
// (the server runs with enableTestCommands, for the test clock).
//
// A session store whose reads keep sessions alive (refreshOnRead) within
// an absolute lifetime, checked by moving the server's clock.
const app = db.getSiblingDB("shexpiry");
app.dropDatabase();
const sessions = app.sessions;
// The Node.js driver under mongosh drops index options it does not know,
// so createIndex cannot pass refreshOnRead: collMod (or runCommand's
// createIndexes) sets it.
sessions.createIndex({ lastSeen: 1 }, { expireAfterSeconds: 1800 });
const mod = app.runCommand({ collMod: "sessions", index: { keyPattern: { lastSeen: 1 }, refreshOnRead: true } });
if (mod.ok !== 1 || mod.refreshOnRead_new !== true) throw new Error("collMod: " + EJSON.stringify(mod));
sessions.createIndex({ createdAt: 1 }, { expireAfterSeconds: 3600 });
const idle = sessions.getIndexes().find((ix) => ix.name === "lastSeen_1");
if (idle.refreshOnRead !== true) throw new Error("getIndexes: " + EJSON.stringify(sessions.getIndexes()));

const now = new Date();
sessions.insertMany([
  { _id: "busy", lastSeen: now, createdAt: now },
  { _id: "idle", lastSeen: now, createdAt: now },
]);
const clock = (secs) => db.adminCommand({ setParameter: 1, mayflyClockOffsetSeconds: secs });

for (const offset of [1000, 2000, 3000]) {
  clock(offset);
  const s = sessions.findOne({ _id: "busy" }); // the read keeps it alive
  if (s === null) throw new Error(`+${offset} s: the busy session is gone`);
  if (s.lastSeen.getTime() < now.getTime() + (offset - 5) * 1000) {
    throw new Error(`+${offset} s: lastSeen not refreshed: ${s.lastSeen.toISOString()}`);
  }
  const idleLeft = sessions.countDocuments({ _id: "idle" }); // a count refreshes nothing
  if (idleLeft !== (offset < 1800 ? 1 : 0)) throw new Error(`+${offset} s: idle session count ${idleLeft}`);
}
clock(3600);
if (sessions.findOne({ _id: "busy" }) !== null) throw new Error("+3600 s: the absolute lifetime did not end the session");

let err = null;
try {
  app.runCommand({ createIndexes: "sessions", indexes: [{ key: { other: 1 }, name: "other_1", refreshOnRead: true }] });
} catch (e) {
  err = e;
}
if (err === null || err.code !== 67) throw new Error("refreshOnRead without expireAfterSeconds: " + err);
print("mongosh expiry ok");
