// Run by integration/sharding_streams_test.go: node node_sharded.mjs <router uri>
// The Node.js driver through `mayfly route`: inserts spread over two
// shards by a hashed _id, finds and an aggregate merged by the router, and
// a change stream merged from both shards, resumed from a token.
import { MongoClient } from 'mongodb';
import assert from 'node:assert/strict';

const client = new MongoClient(process.argv[2]);
try {
  await client.connect();
  const hello = await client.db('admin').command({ hello: 1 });
  assert.equal(hello.msg, 'isdbgrid');
  const orders = client.db('cs').collection('node');

  const stream = orders.watch([], { maxAwaitTimeMS: 500 });
  assert.equal(await stream.tryNext(), null); // opens the stream before the writes

  const docs = [];
  for (let i = 0; i < 30; i++) {
    docs.push({ _id: i, region: ['north', 'south', 'east'][i % 3], qty: i });
  }
  const res = await orders.insertMany(docs);
  assert.equal(res.insertedCount, 30);

  const sorted = await orders.find({ qty: { $gte: 10 } }).sort({ qty: -1 }).skip(2).limit(5).toArray();
  const wantSorted = docs.map((d) => d.qty).filter((q) => q >= 10).sort((a, b) => b - a).slice(2, 7);
  assert.deepEqual(sorted.map((d) => d.qty), wantSorted);
  assert.equal(await orders.countDocuments({ region: 'north' }), docs.filter((d) => d.region === 'north').length);

  const totals = await orders.aggregate([
    { $group: { _id: '$region', total: { $sum: '$qty' }, n: { $count: {} } } },
    { $sort: { _id: 1 } },
  ]).toArray();
  const want = {};
  for (const d of docs) {
    want[d.region] ??= { _id: d.region, total: 0, n: 0 };
    want[d.region].total += d.qty;
    want[d.region].n += 1;
  }
  assert.deepEqual(totals, Object.keys(want).sort().map((r) => want[r]));

  // The inserts' events, from both shards, in the order of the insert.
  const seen = [];
  let resumeAt = null;
  while (seen.length < 30) {
    const ev = await stream.next();
    assert.equal(ev.operationType, 'insert');
    seen.push(ev.documentKey._id);
    if (seen.length === 10) resumeAt = ev._id;
  }
  // An ordered insertMany reaches each shard in runs, one after another,
  // and every run's stamps follow the ones before (one cluster clock).
  assert.deepEqual(seen, docs.map((d) => d._id));
  await stream.close();

  // Resumed after the tenth event: the twenty after it, nothing else.
  const resumed = orders.watch([], { resumeAfter: resumeAt, maxAwaitTimeMS: 500 });
  const rest = [];
  for (let i = 0; i < 20; i++) {
    rest.push((await resumed.next()).documentKey._id);
  }
  assert.deepEqual(rest, seen.slice(10));
  assert.equal(await resumed.tryNext(), null);
  await resumed.close();
  console.log('node sharded ok');
} finally {
  await client.close();
}
