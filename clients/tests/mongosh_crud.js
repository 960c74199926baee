// Run by integration/clients_test.go: mongosh <uri>/test --quiet --file clients/tests/mongosh_crud.js
// Every check throws on failure, which makes mongosh exit non-zero.
function check(cond, what) {
  if (!cond) { throw new Error('check failed: ' + what); }
}

db.c.drop();
const ins = db.c.insertOne({ name: 'ann', n: 3 });
check(ins.acknowledged && ins.insertedId, 'insertOne');
db.c.insertMany([{ name: 'bob', n: 1 }, { name: 'cy', n: 2 }]);
const sorted = db.c.find({}, { _id: 0, name: 1 }).sort({ n: 1 }).toArray().map(d => d.name);
check(JSON.stringify(sorted) === '["bob","cy","ann"]', 'find().sort(): ' + JSON.stringify(sorted));
const upd = db.c.updateMany({ n: { $gte: 2 } }, { $inc: { n: 10 } });
check(upd.matchedCount === 2 && upd.modifiedCount === 2, 'updateMany');
check(db.c.countDocuments() === 3, 'countDocuments');
check(db.c.countDocuments({ n: { $gt: 10 } }) === 2, 'countDocuments with filter');
check(db.c.estimatedDocumentCount() === 3, 'estimatedDocumentCount');
const agg = db.c.aggregate([{ $group: { _id: null, total: { $sum: '$n' } } }]).toArray();
check(agg.length === 1 && agg[0].total === 26, 'aggregate: ' + JSON.stringify(agg));
const stats = db.c.stats();
check(stats.count === 3 && stats.ns === 'test.c', 'stats: ' + JSON.stringify(stats));
const names = db.getCollectionNames();
check(names.includes('c'), 'getCollectionNames');
const dbs = db.adminCommand({ listDatabases: 1 }).databases.map(d => d.name);
check(dbs.includes('test'), 'listDatabases');
check(db.c.deleteOne({ name: 'bob' }).deletedCount === 1, 'deleteOne');
db.c.createIndex({ name: 1 }, { unique: true });
let dup = null;
try { db.c.insertOne({ name: 'ann' }); } catch (e) { dup = e; }
check(dup && dup.code === 11000, 'duplicate key error: ' + dup);
let unknown = null;
try { db.runCommand({ frobnicate: 1 }); } catch (e) { unknown = e; }
check(unknown && unknown.code === 59 && unknown.codeName === 'CommandNotFound', 'unknown command: ' + unknown);
check(db.c.getIndexes().length === 2, 'getIndexes');
check(db.c.drop() === true, 'drop');
check(!db.getCollectionNames().includes('c'), 'dropped');
print('mongosh ok');
