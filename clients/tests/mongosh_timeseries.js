// Run by integration/timeseries_test.go: mongosh <uri> --file mongosh_timeseries.js
// (the server runs with enableTestCommands, for the test clock).
//
// The README's weather store: a time-series collection with
// expireAfterSeconds, a range aggregate by sensor, collMod, and old
// measurements vanishing as the server's clock moves.
const app = db.getSiblingDB("shts");
app.dropDatabase();
app.createCollection("weather", { timeseries: { timeField: "ts", metaField: "meta", granularity: "hours" }, expireAfterSeconds: 86400 });
const weather = app.weather;
const now = new Date();
const hoursAgo = (h) => new Date(now.getTime() - h * 3600e3);
weather.insertMany([0, 6, 12, 18].flatMap((h) => ["north", "south"].map((s) => ({ ts: hoursAgo(h), meta: { sensor: s }, temp: 10 + h }))));
let err = null;
try {
  weather.insertOne({ meta: { sensor: "north" }, temp: 1 });
} catch (e) {
  err = e;
}
if (err === null || err.code !== 2 || !String(err.message).includes("'ts' must be present and contain a valid BSON UTC datetime value")) {
  throw new Error("a measurement without ts: " + err);
}
const groups = weather.aggregate([
  { $match: { ts: { $gte: hoursAgo(13) } } },
  { $group: { _id: "$meta.sensor", n: { $sum: 1 }, avg: { $avg: "$temp" } } },
  { $sort: { _id: 1 } },
]).toArray();
if (EJSON.stringify(groups) !== EJSON.stringify([{ _id: "north", n: 3, avg: 16 }, { _id: "south", n: 3, avg: 16 }])) {
  throw new Error("groups: " + EJSON.stringify(groups));
}
const info = app.getCollectionInfos({ name: "weather" })[0];
if (info.type !== "timeseries" || info.options.timeseries.metaField !== "meta" || Number(info.options.expireAfterSeconds) !== 86400) {
  throw new Error("getCollectionInfos: " + EJSON.stringify(info));
}
const mod = app.runCommand({ collMod: "weather", expireAfterSeconds: 15 * 3600 });
if (mod.ok !== 1) throw new Error("collMod: " + EJSON.stringify(mod));
const clock = (secs) => db.adminCommand({ setParameter: 1, mayflyClockOffsetSeconds: secs });
clock(4 * 3600); // the 12-hour-old measurements pass 15 hours
if (weather.countDocuments({}) !== 4) throw new Error("after 4 h: " + weather.countDocuments({}));
// Expired measurements are hidden at once and deleted by the monitor
// within moments; switching expiry off before it has deleted them would
// show them again, so wait for the four deletions first.
const deleted = () => Number(db.serverStatus().metrics.ttl.deletedDocuments);
for (const until = Date.now() + 10000; deleted() < 4; sleep(20)) {
  if (Date.now() > until) throw new Error("the monitor deleted " + deleted() + " of 4 expired measurements in 10 s");
}
app.runCommand({ collMod: "weather", expireAfterSeconds: "off" });
clock(100 * 3600);
if (weather.countDocuments({}) !== 4) throw new Error("with expiry off: " + weather.countDocuments({}));
weather.drop();
if (app.getCollectionNames().length !== 0) throw new Error("after drop: " + app.getCollectionNames());
print("mongosh timeseries ok");
