// Seed 000: "Expire Least Recently Used Data from a Collection" (drafts).
db.eventLog.insert( { pageID: 100, accessTime: new ISODate() })
db.eventLog.insert( { pageID: 101, accessTime: new ISODate() })
db.eventLog.insert( { pageID: 102, accessTime: new ISODate() })
db.tokenLog.ensureIndex( { accessTime: 1 }, { expireAfterSeconds: 3600 } )
db.eventLog.update( { pageID: 101 }, { $set: { accessTime: new ISODate() } } )
db.authenticationLog.insert( { userID: 100, accessTime: new ISODate() })
db.authenticationLog.insert( { userID: 101, accessTime: new ISODate() })
db.authenticationLog.insert( { userID: 102, accessTime: new ISODate() })
db.authenticationLog.find( { userID: 101 } )
db.authenticationLog.update( { userID: 101 }, { $set: { accessTime: new ISODate() } } )

check(ttlOf(db.tokenLog, { accessTime: 1 }) === 3600, 'tokenLog TTL index');
check(db.eventLog.countDocuments() === 3, 'eventLog documents');
check(db.authenticationLog.findOne({ userID: 101 }) !== null, 'user 101 authenticated');

// "mongod will now remove any pages that have not been accessed": give the
// eventLog a TTL index with a short expiry and keep page 101 touched.
db.eventLog.ensureIndex( { accessTime: 1 }, { expireAfterSeconds: 1 } )
for (let i = 0; i < 6; i++) {
  sleep(300);
  db.eventLog.update( { pageID: 101 }, { $set: { accessTime: new ISODate() } } )
}
waitGone(db.eventLog, { pageID: { $in: [100, 102] } }, 2000);
check(db.eventLog.countDocuments({ pageID: 101 }) === 1, 'the touched page stays');
print('seed 000 ok');
