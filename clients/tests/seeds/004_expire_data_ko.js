// Seed 004: the English tutorial (log.events, app.events) and the Korean
// tt_col walk-through (needs clients/legacy-shell.js loaded first for save).
db.log.events.ensureIndex( { "createdAt": 1 }, { expireAfterSeconds: 3600 } )
db.log.events.insert( {
   "createdAt": new Date(),
   "logEvent": 2,
   "logMessage": "Success!"
} )
db.app.events.ensureIndex( { "expireAt": 1 }, { expireAfterSeconds: 0 } )
db.app.events.insert( {
   "expireAt": new Date('July 22, 2013 14:00:00'),
   "logEvent": 2,
   "logMessage": "Success!"
} )
check(db.log.events.countDocuments() === 1, 'log.events keeps a fresh event');
check(db.app.events.countDocuments() === 0, 'app.events: the 2013 document has expired');

db.tt_col.save( { id: 'id1', name: 'aaa', dt: new Date() } );
db.tt_col.save( { id: 'id2', name: 'bbb', dt: new Date() } );
db.tt_col.save( { id: 'id3', name: 'ccc', dt: new Date() } );
db.tt_col.find();
db.tt_col.ensureIndex( {dt: 1}, {expireAfterSeconds: 10} );
db.tt_col.find();
check(db.tt_col.find().count() === 3, 'three documents before expiry');
// "about 40 seconds later" in MongoDB; here within a moment of the 10s.
const start = Date.now();
waitGone(db.tt_col, {}, 13000);
check(Date.now() - start >= 9000, 'not before the 10 seconds have passed');
check(db.tt_col.find().count() === 0, 'db.tt_col.find().count() is 0');

// The trick: a document whose dt is not a date never expires.
db.tt_col.save( { id: 'id1', name: 'aaa', dt: new Date() } );
db.tt_col.update( { id: 'id1' }, { dt: null } );
check(db.tt_col.findOne({ dt: null }) !== null, 'replacement kept the document with dt: null');
print('seed 004 ok');
