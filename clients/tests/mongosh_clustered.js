// Run by integration/expiry_clients_test.go: mongosh <uri> --file mongosh_clustered.js
// (the server runs with enableTestCommands, for the test clock).
//
// A clustered collection whose documents expire by their date _id, as
// mongosh users create it, checked by moving the server's clock.
const app = db.getSiblingDB("shclustered");
app.dropDatabase();
app.createCollection("events", { clusteredIndex: { key: { _id: 1 }, unique: true, name: "by_time" }, expireAfterSeconds: 3600 });
const events = app.events;

const info = app.getCollectionInfos({ name: "events" })[0];
if (info.options.clusteredIndex.name !== "by_time" || Number(info.options.expireAfterSeconds) !== 3600 || info.idIndex !== undefined) {
  throw new Error("getCollectionInfos: " + EJSON.stringify(info));
}
const ix = events.getIndexes();
if (ix.length !== 1 || ix[0].clustered !== true || ix[0].name !== "by_time") throw new Error("getIndexes: " + EJSON.stringify(ix));

const now = new Date();
events.insertMany([
  { _id: new Date(now.getTime() - 1000), kind: "older" },
  { _id: new Date(now.getTime() + 1000 * 1000), kind: "newer" },
  { _id: new ObjectId(), kind: "oid" },
]);
const kinds = () => events.find().toArray().map((d) => d.kind).join(",");
if (kinds() !== "oid,older,newer") throw new Error("natural order (by _id): " + kinds());

const clock = (secs) => db.adminCommand({ setParameter: 1, mayflyClockOffsetSeconds: secs });
clock(3600);
if (kinds() !== "oid,newer") throw new Error("+3600 s: " + kinds());
clock(3600 + 1000);
if (kinds() !== "oid") throw new Error("+4600 s: " + kinds());

// Switching expiry off shows again what the monitor has not deleted yet:
// wait for its two deletions first.
const deleted = () => Number(db.serverStatus().metrics.ttl.deletedDocuments);
for (const until = Date.now() + 10000; deleted() < 2; sleep(20)) {
  if (Date.now() > until) throw new Error("the monitor deleted " + deleted() + " of 2 expired events in 10 s");
}
const off = app.runCommand({ collMod: "events", expireAfterSeconds: "off" });
if (off.ok !== 1) throw new Error("collMod off: " + EJSON.stringify(off));
events.insertOne({ _id: new Date(now.getTime() - 7200 * 1000), kind: "old" });
if (kinds() !== "oid,old") throw new Error("expiry off, an old date stays: " + kinds());

let err = null;
try {
  app.createCollection("bad", { clusteredIndex: { key: { _id: 1 }, unique: false } });
} catch (e) {
  err = e;
}
if (err === null || err.code !== 5979700) throw new Error("unique: false: " + err);
print("mongosh clustered ok");
