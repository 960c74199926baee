// Run by integration/changestream_clients_test.go:
//   mongosh <uri>/shop --quiet --file clients/tests/mongosh_changestream.js
// An abandoned cart expires and gives its items back to stock, through a
// change stream; every check throws on failure (mongosh exits non-zero).
function check(cond, what) {
  if (!cond) { throw new Error('check failed: ' + what); }
}

function nextEvent(cs) {
  const deadline = Date.now() + 15000;
  while (Date.now() < deadline) {
    const ev = cs.tryNext();
    if (ev) { return ev; }
    sleep(50);
  }
  throw new Error('no change event within 15 s');
}

db.dropDatabase();
db.createCollection('carts', { changeStreamPreAndPostImages: { enabled: true } });
db.carts.createIndex({ touched: 1 }, { expireAfterSeconds: 1 });
db.stock.insertOne({ _id: 'apple', qty: 10 });

// Everyday events on a plain stream.
const all = db.carts.watch();
db.carts.insertOne({ _id: 'c0', items: [], touched: new Date(Date.now() + 3600 * 1000) });
db.carts.updateOne({ _id: 'c0' }, { $set: { note: 'hi' } });
db.carts.deleteOne({ _id: 'c0' });
let ev = nextEvent(all);
check(ev.operationType === 'insert' && ev.fullDocument._id === 'c0', 'insert: ' + JSON.stringify(ev));
ev = nextEvent(all);
check(ev.operationType === 'update' && ev.updateDescription.updatedFields.note === 'hi', 'update: ' + JSON.stringify(ev));
ev = nextEvent(all);
check(ev.operationType === 'delete' && ev.documentKey._id === 'c0' && ev.expired === undefined, 'delete: ' + JSON.stringify(ev));
all.close();

// The application: reserve stock for a cart; when the cart expires,
// give the items back.
const expiries = db.carts.watch(
  [{ $match: { operationType: 'delete', expired: { $exists: true } } }],
  { fullDocumentBeforeChange: 'whenAvailable' });
db.carts.insertOne({ _id: 'c1', items: [{ sku: 'apple', n: 3 }], touched: new Date() });
db.stock.updateOne({ _id: 'apple' }, { $inc: { qty: -3 } });
check(db.stock.findOne({ _id: 'apple' }).qty === 7, 'reserved');
ev = nextEvent(expiries);
check(ev.documentKey._id === 'c1' && ev.expired.index === 'touched_1' && ev.expired.expireAfterSeconds === 1, 'expiry: ' + JSON.stringify(ev));
check(ev.expired.expiredAt instanceof Date && ev.wallTime >= ev.expired.expiredAt, 'expiredAt: ' + JSON.stringify(ev));
for (const item of ev.fullDocumentBeforeChange.items) {
  db.stock.updateOne({ _id: item.sku }, { $inc: { qty: item.n } });
}
check(db.stock.findOne({ _id: 'apple' }).qty === 10, 'stock given back');
expiries.close();

// A warning before expiry: expiryWarningSeconds on the TTL index (through
// createIndexes: createIndex() leaves out options the driver does not know).
const made = db.runCommand({ createIndexes: 'sessions', indexes: [{ key: { at: 1 }, name: 'at_1', expireAfterSeconds: 2, expiryWarningSeconds: 1 }] });
check(made.ok === 1, 'createIndexes: ' + JSON.stringify(made));
const warnings = db.sessions.watch([{ $match: { operationType: 'expiring' } }]);
// Two seconds ahead: the warning pass's first run after the index is made
// only opens its window, and a document already inside it is not warned.
const at = new Date(Date.now() + 2000);
db.sessions.insertOne({ _id: 's1', at: at });
ev = nextEvent(warnings);
check(ev.documentKey._id === 's1' && ev.expiring.index === 'at_1' && ev.expiring.expireAfterSeconds === 2, 'expiring: ' + JSON.stringify(ev));
check(ev.expiring.expiresAt.getTime() === at.getTime() + 2000, 'expiresAt: ' + JSON.stringify(ev));
check(db.sessions.findOne({ _id: 's1' }) !== null, 'warned before it expired');
warnings.close();
print('mongosh changestream ok');
