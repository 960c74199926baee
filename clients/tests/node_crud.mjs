// Run by integration/clients_test.go: node node_crud.mjs <uri>
import { MongoClient } from 'mongodb';
import assert from 'node:assert/strict';

const client = new MongoClient(process.argv[2]);
try {
  await client.connect();
  const db = client.db('test');
  const c = db.collection('node');
  await c.deleteMany({});
  await c.insertMany([{ _id: 1, k: 'a', n: 1 }, { _id: 2, k: 'b', n: 2 }, { _id: 3, k: 'a', n: 3 }]);
  const found = await c.find({ k: 'a' }).sort({ n: -1 }).toArray();
  assert.deepEqual(found.map(d => d._id), [3, 1]);
  const u = await c.updateOne({ _id: 2 }, { $set: { k: 'a' } });
  assert.equal(u.modifiedCount, 1);
  assert.equal(await c.countDocuments({ k: 'a' }), 3);
  const grouped = await c.aggregate([{ $match: { k: 'a' } }, { $count: 'n' }]).toArray();
  assert.deepEqual(grouped, [{ n: 3 }]);
  const d = await c.deleteMany({ n: { $lt: 3 } });
  assert.equal(d.deletedCount, 2);
  await assert.rejects(c.insertOne({ _id: 3 }), e => e.code === 11000);
  await assert.rejects(db.command({ frobnicate: 1 }), e => e.code === 59);
  await assert.rejects(c.updateOne({}, { $bogus: { a: 1 } }), e => e.code === 9);
  const many = Array.from({ length: 300 }, (_, i) => ({ i }));
  await db.collection('many').insertMany(many);
  assert.equal((await db.collection('many').find().batchSize(50).toArray()).length, 300);
  console.log('node ok');
} finally {
  await client.close();
}
