// Run by integration/changestream_clients_test.go: node node_changestream.mjs <uri>
// An abandoned cart expires and gives its items back to stock, through a
// change stream.
import { MongoClient } from 'mongodb';
import assert from 'node:assert/strict';

const client = new MongoClient(process.argv[2]);
try {
  await client.connect();
  const db = client.db('nodeshop');
  await db.dropDatabase();
  await db.createCollection('carts', { changeStreamPreAndPostImages: { enabled: true } });
  const carts = db.collection('carts');
  const stock = db.collection('stock');
  await carts.createIndex({ touched: 1 }, { expireAfterSeconds: 1 });
  await stock.insertOne({ _id: 'apple', qty: 10 });

  // Everyday events; tryNext opens the stream before the writes.
  const all = carts.watch([], { maxAwaitTimeMS: 200 });
  assert.equal(await all.tryNext(), null);
  await carts.insertOne({ _id: 'c0', items: [], touched: new Date(Date.now() + 3600e3) });
  await carts.replaceOne({ _id: 'c0' }, { items: ['x'], touched: new Date(Date.now() + 3600e3) });
  await carts.deleteOne({ _id: 'c0' });
  let ev = await all.next();
  assert.equal(ev.operationType, 'insert');
  assert.equal(ev.fullDocument._id, 'c0');
  const resumeAt = ev._id;
  ev = await all.next();
  assert.equal(ev.operationType, 'replace');
  assert.deepEqual(ev.fullDocument.items, ['x']);
  ev = await all.next();
  assert.equal(ev.operationType, 'delete');
  assert.equal(ev.expired, undefined);
  await all.close();
  const resumed = carts.watch([], { resumeAfter: resumeAt });
  assert.equal((await resumed.next()).operationType, 'replace');
  await resumed.close();

  // The application.
  const expiries = carts.watch(
    [{ $match: { operationType: 'delete', expired: { $exists: true } } }],
    { fullDocumentBeforeChange: 'whenAvailable', maxAwaitTimeMS: 500 });
  assert.equal(await expiries.tryNext(), null);
  await carts.insertOne({ _id: 'c1', items: [{ sku: 'apple', n: 3 }], touched: new Date() });
  await stock.updateOne({ _id: 'apple' }, { $inc: { qty: -3 } });
  ev = await expiries.next();
  assert.equal(ev.documentKey._id, 'c1');
  assert.equal(ev.expired.index, 'touched_1');
  assert.equal(ev.expired.expireAfterSeconds, 1);
  assert.ok(ev.expired.expiredAt instanceof Date && ev.wallTime >= ev.expired.expiredAt);
  for (const item of ev.fullDocumentBeforeChange.items) {
    await stock.updateOne({ _id: item.sku }, { $inc: { qty: item.n } });
  }
  assert.equal((await stock.findOne({ _id: 'apple' })).qty, 10);
  await expiries.close();

  // A warning before expiry: expiryWarningSeconds on the TTL index (through
  // createIndexes: createIndex() leaves out options the driver does not know).
  const sessions = db.collection('sessions');
  await db.command({ createIndexes: 'sessions', indexes: [{ key: { at: 1 }, name: 'at_1', expireAfterSeconds: 2, expiryWarningSeconds: 1 }] });
  const warnings = sessions.watch([{ $match: { operationType: 'expiring' } }], { maxAwaitTimeMS: 500 });
  assert.equal(await warnings.tryNext(), null);
  // Two seconds ahead: the warning pass's first run after the index is
  // made only opens its window, and a document already inside it is not
  // warned, so the date must stay ahead of that first run.
  const at = new Date(Date.now() + 2000);
  await sessions.insertOne({ _id: 's1', at });
  ev = await warnings.next();
  assert.equal(ev.documentKey._id, 's1');
  assert.equal(ev.expiring.index, 'at_1');
  assert.equal(ev.expiring.expiresAt.getTime(), at.getTime() + 2000);
  assert.ok(await sessions.findOne({ _id: 's1' }), 'warned before it expired');
  await warnings.close();
  console.log('node changestream ok');
} finally {
  await client.close();
}
