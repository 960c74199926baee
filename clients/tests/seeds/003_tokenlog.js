// Seed 003: tokenLog, 30 minutes.
db.tokenLog.insert( { token: 100, accessTime: new ISODate() })
db.tokenLog.insert( { token: 101, accessTime: new ISODate() })
db.tokenLog.insert( { token: 102, accessTime: new ISODate() })
db.tokenLog.ensureIndex( { accessTime: 1 }, { expireAfterSeconds: 30*60 } )
db.tokenLog.update( { "token": 101 }, { $set: { accessTime: new ISODate() } } )

check(ttlOf(db.tokenLog, { accessTime: 1 }) === 1800, 'tokenLog TTL');
// ensureIndex cannot change expireAfterSeconds; collMod can.
let err = null;
try { db.tokenLog.ensureIndex( { accessTime: 1 }, { expireAfterSeconds: 1 } ) } catch (e) { err = e; }
check(err && err.code === 85, 'changing the TTL through ensureIndex fails with 85: ' + err);
db.runCommand({ collMod: 'tokenLog', index: { keyPattern: { accessTime: 1 }, expireAfterSeconds: 1 } });
for (let i = 0; i < 6; i++) {
  sleep(300);
  db.tokenLog.update( { "token": 101 }, { $set: { accessTime: new ISODate() } } )
}
waitGone(db.tokenLog, { token: { $in: [100, 102] } }, 2000);
check(db.tokenLog.countDocuments({ token: 101 }) === 1, 'the touched token stays');
print('seed 003 ok');
