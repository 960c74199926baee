// Legacy mongo shell helpers that mongosh removed, for running old scripts
// (such as MongoDB 2.x tutorials) unchanged against Mayfly:
//
//   mongosh <uri> --file clients/legacy-shell.js --file old-script.js
//
// or load it from ~/.mongoshrc.js. The helpers only call current commands.
(function () {
  const proto = Object.getPrototypeOf(db.getCollection('legacy_shell_probe'));
  if (typeof proto.save === 'function' && proto.update.legacyShell) {
    return;
  }
  // save(doc): insert when doc has no _id, otherwise replace the document
  // with that _id, inserting it if missing (the legacy shell's semantics).
  // defineProperty, because mongosh's script rewriting drops a plain
  // assignment to the shell API's prototypes.
  Object.defineProperty(proto, 'save', {
    configurable: true,
    writable: true,
    value: function save(doc, options) {
      if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
        throw new Error("can't save a " + typeof doc);
      }
      if (doc._id === undefined) {
        return this.insertOne(doc, options);
      }
      return this.replaceOne({ _id: doc._id }, doc, Object.assign({ upsert: true }, options));
    },
  });

  // update(query, doc): the legacy shell replaced the document when doc had
  // no update operators; mongosh's update() refuses that client-side.
  const modernUpdate = proto.update;
  const legacyUpdate = function update(query, doc, upsertOrOptions, multi) {
    const isReplacement = doc && typeof doc === 'object' && !Array.isArray(doc) &&
      Object.keys(doc).every(k => !k.startsWith('$'));
    const options = typeof upsertOrOptions === 'object' && upsertOrOptions !== null
      ? upsertOrOptions : { upsert: !!upsertOrOptions, multi: !!multi };
    if (isReplacement && Object.keys(doc).length > 0) {
      return this.replaceOne(query, doc, { upsert: !!options.upsert });
    }
    return modernUpdate.call(this, query, doc, options);
  };
  legacyUpdate.legacyShell = true;
  Object.defineProperty(proto, 'update', { configurable: true, writable: true, value: legacyUpdate });
})();
