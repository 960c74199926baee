// Seed 001: the shopping cart pattern.
db.carts.insert( { cartID: 100, lastChange: new ISODate(), products: [ "soap", "sugar", "milk" ] })
db.carts.insert( { cartID: 101, lastChange: new ISODate(), products: [ "milk", "bread", "eggs" ] } )
db.carts.insert( { cartID: 102, lastChange: new ISODate(), products: [ "sugar", "flour", "eggs" ] } )
db.carts.ensureIndex( { lastChange: 1 }, { expireAfterSeconds: 86400 } )
db.carts.update( { cartID: 101 }, { $set: { lastChange: new ISODate(), products: [ "milk", "bread", "eggs", "banana" ] } } )

check(ttlOf(db.carts, { lastChange: 1 }) === 86400, 'carts TTL index');
check(db.carts.findOne({ cartID: 101 }).products.length === 4, 'cart 101 updated');
// Abandoned carts go; shorten the day to a second with collMod.
const r = db.runCommand({ collMod: 'carts', index: { keyPattern: { lastChange: 1 }, expireAfterSeconds: 1 } });
check(r.expireAfterSeconds_old == 86400 && r.expireAfterSeconds_new == 1, 'collMod ' + JSON.stringify(r));
for (let i = 0; i < 6; i++) {
  sleep(300);
  db.carts.update( { cartID: 101 }, { $set: { lastChange: new ISODate() } } )
}
waitGone(db.carts, { cartID: { $ne: 101 } }, 2000);
check(db.carts.countDocuments() === 1, 'the active cart stays');
print('seed 001 ok');
