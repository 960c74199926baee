// Shared checks for the seed scripts (loaded first with --file).
function check(cond, what) {
  if (!cond) { throw new Error('check failed: ' + what); }
}
// waitGone polls until the collection holds no documents matching filter,
// counting both what readers see and what is physically stored.
function waitGone(coll, filter, ms) {
  const deadline = Date.now() + ms;
  while (coll.countDocuments(filter) > 0) {
    check(Date.now() < deadline, coll.getName() + ' still has ' + JSON.stringify(filter) + ' after ' + ms + 'ms');
    sleep(50);
  }
}
function ttlOf(coll, key) {
  const ix = coll.getIndexes().find(i => JSON.stringify(i.key) === JSON.stringify(key));
  return ix && ix.expireAfterSeconds;
}
