// Run by integration/auth_clients_test.go: mongosh --nodb --file mongosh_auth.js
// Reads MAYFLY_HOST, MAYFLY_TLS_OPTS and MAYFLY_NOCERT_OPTS; logs in over
// SCRAM-SHA-256 and SCRAM-SHA-1 and checks that a wrong password, an
// unknown user and (over TLS) a missing client certificate are refused.
function check(cond, what) {
  if (!cond) { throw new Error('check failed: ' + what); }
}
const host = process.env.MAYFLY_HOST;
const tls = process.env.MAYFLY_TLS_OPTS || '';
const nocert = process.env.MAYFLY_NOCERT_OPTS || '';
const uri = (user, pwd, mech, opts) =>
  `mongodb://${user}:${pwd}@${host}/test?authSource=test&authMechanism=${mech}&directConnection=true&serverSelectionTimeoutMS=3000${opts === undefined ? tls : opts}`;

function mustFail(u, what) {
  try {
    const d = connect(u);
    d.runCommand({ ping: 1 });
  } catch (e) {
    return e;
  }
  throw new Error(what + ' accepted');
}

for (const mech of ['SCRAM-SHA-256', 'SCRAM-SHA-1']) {
  const d = connect(uri('app', 'app-pw', mech));
  d.shauth.insertOne({ mech: mech });
  check(d.shauth.countDocuments({ mech: mech }) === 1, 'count ' + mech);
  const st = d.runCommand({ connectionStatus: 1 });
  check(st.authInfo.authenticatedUsers[0].user === 'app', 'connectionStatus ' + JSON.stringify(st));
  for (const [u, what] of [[uri('app', 'wrong-pw', mech), 'wrong password'], [uri('nobody', 'app-pw', mech), 'unknown user']]) {
    const e = mustFail(u, what);
    check(e.code === 18 && /Authentication failed/.test(e.message), what + ': ' + e);
  }
}
if (tls) {
  const d = connect(`mongodb://${host}/test?authMechanism=MONGODB-X509&authSource=%24external&directConnection=true${tls}`);
  d.shauth.insertOne({ x509: true });
  const st = d.runCommand({ connectionStatus: 1 });
  check(st.authInfo.authenticatedUsers[0].user === 'CN=client', 'X.509 connectionStatus ' + JSON.stringify(st));
}
if (nocert) {
  const e = mustFail(uri('app', 'app-pw', 'SCRAM-SHA-256', nocert), 'missing client certificate');
  check(e.code !== 18 && /certificate required/.test(e.message), 'missing certificate: ' + e);
  print('no certificate: ' + e.name + ': ' + e.message);
}
print('mongosh auth ok');
