package integration

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/server"
)

// authClientEnv starts an access-controlled server (TLS required, with
// client certificates, when useTLS) with the user app/app-pw (readWrite on
// test; over TLS also the certificate's user CN=client in $external) and
// sets the environment the client scripts read.
func authClientEnv(t *testing.T, useTLS bool) *logBuffer {
	t.Helper()
	var s *testServer
	var logs *logBuffer
	if useTLS {
		var p *testPKI
		s, p, logs = tlsServer(t, server.TLSRequire)
		t.Setenv("MAYFLY_TLS_OPTS", "&tls=true&tlsCAFile="+p.CAFile+"&tlsCertificateKeyFile="+p.ClientFile)
		t.Setenv("MAYFLY_NOCERT_OPTS", "&tls=true&tlsCAFile="+p.CAFile)
		runCmd(t, connect(t, s).Database("$external"), bson.D{{Key: "createUser", Value: "CN=client"},
			{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "test"}}}}})
	} else {
		s, logs = startAuthServer(t, app.Config{})
		t.Setenv("MAYFLY_TLS_OPTS", "")
		t.Setenv("MAYFLY_NOCERT_OPTS", "")
	}
	createUser(t, connect(t, s), "test", "app", "app-pw", bson.A{"readWrite"})
	t.Setenv("MAYFLY_HOST", s.app.Addr().String())
	return logs
}

func transports() map[string]bool { return map[string]bool{"plain": false, "tls": true} }

// runAuthScript runs a client script plain and over TLS and checks it
// reports success.
func runAuthScript(t *testing.T, ok string, script func(t *testing.T) string) {
	for name, useTLS := range transports() {
		t.Run(name, func(t *testing.T) {
			logs := authClientEnv(t, useTLS)
			out := script(t)
			t.Log(out)
			if !strings.Contains(out, ok) {
				t.Fatalf("output:\n%s", out)
			}
			// The whole server log of the run: logins right and wrong, never a secret.
			for _, secret := range []string{"app-pw", "wrong-pw", rootPwd} {
				if strings.Contains(logs.String(), secret) {
					t.Fatalf("server log contains %q", secret)
				}
			}
			if !strings.Contains(logs.String(), "Authentication failed") {
				t.Fatal("failed logins were not logged")
			}
		})
	}
}

func TestAuthMongosh(t *testing.T) {
	runAuthScript(t, "mongosh auth ok", func(t *testing.T) string {
		bin := filepath.Join(ensureNodeClients(t), "node_modules", ".bin", "mongosh")
		out, _ := run(t, "", 2*time.Minute, bin, "--nodb", "--quiet", "--norc", "--file", scriptPath(t, "mongosh_auth.js"))
		return out
	})
}

func TestAuthNodeDriver(t *testing.T) {
	runAuthScript(t, "node auth ok", func(t *testing.T) string {
		out, _ := run(t, ensureNodeClients(t), 2*time.Minute, "node", scriptPath(t, "node_auth.mjs"))
		return out
	})
}

func TestAuthPymongo(t *testing.T) {
	runAuthScript(t, "pymongo auth ok", func(t *testing.T) string {
		out, _ := run(t, "", 2*time.Minute, ensurePymongo(t), scriptPath(t, "pymongo_auth.py"))
		return out
	})
}
