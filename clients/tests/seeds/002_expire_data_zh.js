// Seed 002: 通过设置TTL使集合中的数据过期 (log_events).
db.log_events.ensureIndex( { "createdAt": 1 }, { expireAfterSeconds: 3600 } )
db.log_events.insert( {
   "createdAt": new Date(),
   "logEvent": 2,
   "logMessage": "Success!"
} )
db.log_events.ensureIndex( { "expireAt": 1 }, { expireAfterSeconds: 0 } )
db.log_events.insert( {
   "expireAt": new Date('July 22, 2013 14:00:00'),
   "logEvent": 2,
   "logMessage": "Success!"
} )

check(ttlOf(db.log_events, { createdAt: 1 }) === 3600, 'createdAt TTL');
check(ttlOf(db.log_events, { expireAt: 1 }) === 0, 'expireAt TTL');
// The expireAt date has passed: the document is expired at once.
check(db.log_events.countDocuments({ expireAt: { $exists: true } }) === 0, 'past expireAt is gone');
check(db.log_events.countDocuments() === 1, 'the fresh event stays');
// A document whose expireAt arrives in a second goes then.
db.log_events.insert( { "expireAt": new Date(Date.now() + 1000), "logEvent": 3 } )
check(db.log_events.countDocuments({ logEvent: 3 }) === 1, 'not yet expired');
waitGone(db.log_events, { logEvent: 3 }, 2500);
print('seed 002 ok');
