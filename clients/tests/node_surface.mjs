// Run by integration/surface_clients_test.go: node node_surface.mjs <uri>
// MongoDB 8.0 options that must not be silently ignored.
import { MongoClient } from 'mongodb';
import assert from 'node:assert/strict';

const client = new MongoClient(process.argv[2]);
try {
  await client.connect();
  const db = client.db('test');
  const c = db.collection('nodesurface');
  await c.deleteMany({});
  await c.insertMany([{ _id: 1, n: 1, tag: 'a' }, { _id: 2, n: 2, tag: 'a' }, { _id: 3, n: 3, tag: 'a' }]);

  const eq = { $expr: { $eq: ['$n', '$$target'] } };
  const found = await c.find(eq, { let: { target: 2 } }).toArray();
  assert.deepEqual(found.map(d => d._id), [2]);
  const del = await c.deleteOne(eq, { let: { target: 3 } });
  assert.equal(del.deletedCount, 1);
  const u = await c.updateMany(eq, [{ $set: { v: '$$target' } }], { let: { target: 1 } });
  assert.equal(u.modifiedCount, 1);
  assert.equal((await c.findOne({ _id: 1 })).v, 1);
  await assert.rejects(c.find({ $expr: { $eq: ['$n', '$$nope'] } }).toArray(), e => e.code === 17276);

  await c.updateOne({ tag: 'a' }, { $set: { top: true } }, { sort: { n: -1 } });
  assert.equal((await c.findOne({ top: true }))._id, 2);
  await c.replaceOne({ tag: 'a' }, { tag: 'b', n: 0 }, { sort: { n: 1 } });
  assert.equal((await c.findOne({ tag: 'b' }))._id, 1);

  const names = db.collection('nodenames');
  await names.deleteMany({});
  await names.insertMany([{ _id: 1, name: 'ann' }, { _id: 2, name: 'Ann' }, { _id: 3, name: 'Bob' }]);
  const ci = { locale: 'en', strength: 2 };
  assert.equal((await names.find({ name: 'ANN' }, { collation: ci }).toArray()).length, 2);
  assert.equal(await names.countDocuments({ name: 'ANN' }, { collation: ci }), 2);
  const order = await names.find({}, { collation: { locale: 'en' } }).sort({ name: 1 }).toArray();
  assert.deepEqual(order.map(d => d._id), [1, 2, 3]);
  assert.deepEqual((await names.distinct('name', {}, { collation: ci })).length, 2);
  const fam = await names.findOneAndDelete({ name: 'BOB' }, { collation: ci });
  assert.equal(fam._id, 3);
  // a collection's default collation, and $group under it
  await db.collection('nodeci').drop().catch(() => {});
  const cin = await db.createCollection('nodeci', { collation: ci });
  await cin.insertMany([{ _id: 1, name: 'ann' }, { _id: 2, name: 'Ann' }, { _id: 3, name: 'Bob' }]);
  assert.equal(await cin.countDocuments({ name: 'ANN' }), 2);
  const [info] = await db.listCollections({ name: 'nodeci' }).toArray();
  assert.equal(info.options.collation.strength, 2);
  assert.equal((await cin.aggregate([{ $group: { _id: '$name' } }]).toArray()).length, 2);
  assert.equal((await cin.deleteMany({ name: 'ANN' })).deletedCount, 2);

  // 8.0 client bulk write across namespaces
  const bw = await client.bulkWrite([
    { name: 'insertOne', namespace: 'test.bwa', document: { _id: 1 } },
    { name: 'insertOne', namespace: 'other.bwb', document: { _id: 1, n: 1 } },
    { name: 'updateOne', namespace: 'other.bwb', filter: { _id: 1 }, update: { $inc: { n: 1 } } },
    { name: 'deleteMany', namespace: 'test.bwa', filter: {} },
  ]);
  assert.equal(bw.insertedCount, 2);
  assert.equal(bw.modifiedCount, 1);
  assert.equal(bw.deletedCount, 1);
  assert.equal((await client.db('other').collection('bwb').findOne({ _id: 1 })).n, 2);

  // schema validation
  await db.collection('nodevv').drop().catch(() => {});
  const vv = await db.createCollection('nodevv', { validator: { qty: { $gt: 0 } } });
  await assert.rejects(vv.insertOne({ qty: -1 }), e => e.code === 121 && e.errInfo.details.reason === 'comparison failed');
  await vv.insertOne({ qty: -1 }, { bypassDocumentValidation: true });

  // views
  await db.collection('nodeview').drop().catch(() => {});
  await db.createCollection('nodeview', { viewOn: 'nodesurface', pipeline: [{ $match: { tag: 'b' } }] });
  assert.equal((await db.collection('nodeview').find().toArray()).length, 1);
  await assert.rejects(db.collection('nodeview').insertOne({ tag: 'b' }), e => e.code === 166);

  // tailable cursor on a capped collection
  await db.collection('nodecap').drop().catch(() => {});
  const cap = await db.createCollection('nodecap', { capped: true, size: 65536 });
  await cap.insertMany([{ _id: 1 }, { _id: 2 }]);
  const tail = cap.find({}, { tailable: true, awaitData: true, maxAwaitTimeMS: 100 });
  assert.equal((await tail.next())._id, 1);
  assert.equal((await tail.next())._id, 2);
  await cap.insertOne({ _id: 3 });
  assert.equal((await tail.next())._id, 3);
  await tail.close();
  console.log('node surface ok');
} finally {
  await client.close();
}
