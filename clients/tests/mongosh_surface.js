// Run by integration/surface_clients_test.go: mongosh <uri>/test --quiet --file clients/tests/mongosh_surface.js
// MongoDB 8.0 options that must not be silently ignored. Every check throws on failure.
function check(cond, what) {
  if (!cond) { throw new Error('check failed: ' + what); }
}
function code(f) {
  try { f(); } catch (e) { return e.code; }
  return 0;
}

const c = db.surface;
c.drop();
c.insertMany([{ _id: 1, n: 1, tag: 'a' }, { _id: 2, n: 2, tag: 'a' }, { _id: 3, n: 3, tag: 'a' }]);

// let on find, update, delete, findAndModify
const eq = { $expr: { $eq: ['$n', '$$target'] } };
const found = c.find(eq, {}, { let: { target: 2 } }).toArray();
check(found.length === 1 && found[0]._id === 2, 'find with let: ' + JSON.stringify(found));
const up = c.updateOne(eq, { $set: { hit: true } }, { let: { target: 3 } });
check(up.modifiedCount === 1 && c.findOne({ _id: 3 }).hit === true, 'updateOne with let');
const fam = c.findOneAndUpdate(eq, { $inc: { n: 10 } }, { let: { target: 1 }, returnDocument: 'after' });
check(fam && fam._id === 1 && fam.n === 11, 'findOneAndUpdate with let: ' + JSON.stringify(fam));
check(code(() => c.find({ $expr: { $eq: ['$n', '$$nope'] } }).toArray()) === 17276, 'undefined variable');

// sort on updateOne / replaceOne (8.0)
c.updateOne({ tag: 'a' }, { $set: { top: true } }, { sort: { n: -1 } });
check(c.findOne({ top: true })._id === 1, 'updateOne with sort {n: -1} picks n: 11');
c.replaceOne({ tag: 'a' }, { tag: 'b' }, { sort: { n: 1 } });
check(c.findOne({ tag: 'b' })._id === 2, 'replaceOne with sort {n: 1} picks n: 2');
// collation
const names = db.names;
names.drop();
names.insertMany([{ _id: 1, name: 'ann' }, { _id: 2, name: 'Ann' }, { _id: 3, name: 'Bob' }]);
const ci = { locale: 'en', strength: 2 };
check(names.find({ name: 'ANN' }).collation(ci).count() === 2, 'find().collation()');
check(names.countDocuments({ name: 'ANN' }, { collation: ci }) === 2, 'countDocuments with collation');
const order = names.find().sort({ name: 1 }).collation({ locale: 'en' }).toArray().map(d => d._id);
check(JSON.stringify(order) === '[1,2,3]', 'collated sort: ' + JSON.stringify(order));
check(names.updateMany({ name: 'ann' }, { $set: { a: 1 } }, { collation: ci }).modifiedCount === 2, 'updateMany with collation');
check(names.deleteOne({ name: 'BOB' }, { collation: ci }).deletedCount === 1, 'deleteOne with collation');
check(code(() => names.find().collation({ locale: 'en', strength: 9 }).toArray()) === 51024, 'bad strength');
// a collection's default collation, and $group under it
db.cinames.drop();
db.createCollection('cinames', { collation: ci });
const cin = db.cinames;
cin.insertMany([{ _id: 1, name: 'ann' }, { _id: 2, name: 'Ann' }, { _id: 3, name: 'Bob' }]);
check(cin.find({ name: 'ANN' }).count() === 2, 'find under the default collation');
const infos = db.getCollectionInfos({ name: 'cinames' });
check(infos[0].options.collation.locale === 'en' && infos[0].options.collation.strength === 2, 'listCollections collation: ' + JSON.stringify(infos));
check(cin.aggregate([{ $group: { _id: '$name' } }]).toArray().length === 2, '$group under the default collation');
check(cin.updateMany({ name: 'ANN' }, { $set: { a: 1 } }).modifiedCount === 2, 'updateMany under the default collation');
// 8.0 bulkWrite command
const bw = db.adminCommand({ bulkWrite: 1, ops: [
  { insert: 0, document: { _id: 1 } },
  { update: 0, filter: { _id: 1 }, updateMods: { $set: { v: 1 } } },
  { delete: 1, filter: {}, multi: true },
], nsInfo: [{ ns: 'test.shbw' }, { ns: 'test.names' }] });
check(bw.ok === 1 && bw.nInserted === 1 && bw.nModified === 1 && bw.nDeleted === 2, 'bulkWrite: ' + JSON.stringify(bw));
// schema validation
db.vv.drop();
db.createCollection('vv', { validator: { qty: { $gt: 0 } } });
let verr = null;
try { db.vv.insertOne({ qty: 0 }); } catch (e) { verr = e; }
check(verr && verr.code === 121 && verr.errInfo && verr.errInfo.details.operatorName === '$gt', 'validation error: ' + verr);
check(db.vv.insertOne({ qty: 0 }, { bypassDocumentValidation: true }).acknowledged, 'bypassDocumentValidation');
// views
db.vsrc.drop(); db.vview.drop();
db.vsrc.insertMany([{ _id: 1, k: 'a' }, { _id: 2, k: 'b' }, { _id: 3, k: 'a' }]);
db.createView('vview', 'vsrc', [{ $match: { k: 'a' } }]);
check(db.vview.find().toArray().length === 2, 'find through a view');
check(db.vview.countDocuments({ _id: { $gt: 1 } }) === 1, 'countDocuments on a view');
check(code(() => db.vview.insertOne({ k: 'a' })) === 166, 'insert into a view');
// tailable cursor on a capped collection
db.cap.drop();
db.createCollection('cap', { capped: true, size: 65536 });
db.cap.insertMany([{ _id: 1 }, { _id: 2 }]);
const tail = db.cap.find().tailable({ awaitData: true });
check(tail.next()._id === 1 && tail.next()._id === 2, 'tailable first batch');
db.cap.insertOne({ _id: 3 });
check(tail.next()._id === 3, 'tailable sees a new document');
// the server's logical sessions, as mongod lists them
const sessions = db.aggregate([{ $listLocalSessions: {} }]).toArray();
check(sessions.length >= 1 && sessions[0]._id.id !== undefined && sessions[0].lastUse instanceof Date, '$listLocalSessions: ' + JSON.stringify(sessions));
print('mongosh surface ok');
