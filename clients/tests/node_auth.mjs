// Run by integration/auth_clients_test.go: node node_auth.mjs
// Reads MAYFLY_HOST, MAYFLY_TLS_OPTS and MAYFLY_NOCERT_OPTS; logs in over
// SCRAM-SHA-256 and SCRAM-SHA-1 and checks that a wrong password, an
// unknown user and (over TLS) a missing client certificate are refused.
import { MongoClient } from 'mongodb';
import assert from 'node:assert/strict';

const host = process.env.MAYFLY_HOST;
const tls = process.env.MAYFLY_TLS_OPTS || '';
const nocert = process.env.MAYFLY_NOCERT_OPTS || '';
const uri = (user, pwd, mech, opts = tls) =>
  `mongodb://${user}:${pwd}@${host}/test?authSource=test&authMechanism=${mech}&directConnection=true${opts}`;

async function mustFail(u, what) {
  const client = new MongoClient(u, { serverSelectionTimeoutMS: 3000 });
  try {
    await client.connect();
    await client.db('test').command({ ping: 1 });
  } catch (e) {
    return e;
  } finally {
    await client.close();
  }
  throw new Error(what + ' accepted');
}

for (const mech of ['SCRAM-SHA-256', 'SCRAM-SHA-1']) {
  const client = new MongoClient(uri('app', 'app-pw', mech));
  try {
    const c = client.db('test').collection('nodeauth');
    await c.insertOne({ mech });
    assert.equal(await c.countDocuments({ mech }), 1);
    const st = await client.db('test').command({ connectionStatus: 1 });
    assert.deepEqual(st.authInfo.authenticatedUsers, [{ user: 'app', db: 'test' }]);
  } finally {
    await client.close();
  }
  for (const [u, what] of [[uri('app', 'wrong-pw', mech), 'wrong password'], [uri('nobody', 'app-pw', mech), 'unknown user']]) {
    const e = await mustFail(u, what);
    assert.equal(e.code, 18, `${what}: ${e}`);
    assert.match(e.message, /Authentication failed/);
  }
}
if (tls) {
  const x509 = `mongodb://${host}/?authMechanism=MONGODB-X509&authSource=%24external&directConnection=true${tls}`;
  const client = new MongoClient(x509);
  try {
    await client.db('test').collection('nodeauth').insertOne({ x509: true });
    const st = await client.db('test').command({ connectionStatus: 1 });
    assert.deepEqual(st.authInfo.authenticatedUsers, [{ user: 'CN=client', db: '$external' }]);
  } finally {
    await client.close();
  }
}
if (nocert) {
  const e = await mustFail(uri('app', 'app-pw', 'SCRAM-SHA-256', nocert), 'missing client certificate');
  assert.notEqual(e.code, 18, 'missing certificate gave an authentication error: ' + e);
  assert.match(e.message, /certificate required/);
  console.log('no certificate: ' + e.name + ': ' + e.message);
}
console.log('node auth ok');
