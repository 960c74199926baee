// Run by integration/replset_clients_test.go: node node_replset.mjs <uri>
// with the seed list of an initiated three-member set.
import { MongoClient, ReadPreference } from "mongodb";

const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 20000, retryWrites: true, w: "majority" });
await client.connect();
const hello = await client.db("admin").command({ hello: 1 });
if (!hello.isWritablePrimary || hello.setName !== "rs0" || !hello.topologyVersion) throw new Error("hello: " + JSON.stringify(hello));
const sessions = client.db("test").collection("sessions");
await sessions.createIndex({ accessTime: 1 }, { expireAfterSeconds: 1800 });
await sessions.insertOne({ _id: "t1", accessTime: new Date() });
await sessions.updateOne({ _id: "t1" }, { $set: { accessTime: new Date() } });
let seen = null;
for (let i = 0; i < 100 && !seen; i++) {
  seen = await sessions.findOne({ _id: "t1" }, { readPreference: ReadPreference.SECONDARY });
  if (!seen) await new Promise((r) => setTimeout(r, 100));
}
if (!seen) throw new Error("a secondary read never saw the session");
const status = await client.db("admin").command({ replSetGetStatus: 1 });
if (status.members.filter((m) => m.stateStr === "PRIMARY").length !== 1) throw new Error(JSON.stringify(status));
await client.close();
console.log("node replset ok");
