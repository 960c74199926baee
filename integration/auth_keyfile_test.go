package integration

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/tlsconf"
)

// TestKeyFileMembers: a server with a keyFile has access control on, and a
// member proves the key over the wire with auth.Authenticate as
// __system@local; another key is refused.
func TestKeyFileMembers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte("c2hhcmVkIHNldCBrZXk=\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	kf, err := auth.LoadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startAuthServer(t, app.Config{Security: app.Security{KeyFile: path}})
	addr := s.app.Addr().String()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rt := auth.WireRoundTrip(nc)
	ctx := context.Background()
	reply, err := rt(ctx, "test", bson.D{{Key: "find", Value: "c"}})
	if err != nil || lookupField(reply, "code") != int32(13) {
		t.Fatalf("keyFile must turn access control on: %v %v", reply, err)
	}
	if err := auth.Authenticate(ctx, rt, kf.Credential()); err != nil {
		t.Fatalf("member with the key: %v", err)
	}
	reply, err = rt(ctx, "local", bson.D{{Key: "find", Value: "c"}})
	if err != nil || lookupField(reply, "ok") != 1.0 {
		t.Fatalf("member after login: %v %v", reply, err)
	}
	other, _ := auth.ParseKey("other", "YW5vdGhlciBrZXk=")
	nc2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	if err := auth.Authenticate(ctx, auth.WireRoundTrip(nc2), other.Credential()); err == nil {
		t.Fatal("a member with another key authenticated")
	}
}

// TestAuthHelloHelpsDrivers: hello names a user's mechanisms and runs the
// first SCRAM step a driver puts in it; the conversation then continues
// on the same connection.
func TestAuthHelloHelpsDrivers(t *testing.T) {
	s, _ := startAuthServer(t, app.Config{})
	createUser(t, connect(t, s), "test", "hal", "hal-pw", bson.A{"read"})
	nc, err := net.Dial("tcp", s.app.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rt := auth.WireRoundTrip(nc)
	ctx := context.Background()
	reply, err := rt(ctx, "admin", bson.D{{Key: "hello", Value: 1}, {Key: "saslSupportedMechs", Value: "test.hal"}})
	if err != nil {
		t.Fatal(err)
	}
	mechs, _ := lookupField(reply, "saslSupportedMechs").(bson.A)
	if len(mechs) != 2 || mechs[0] != "SCRAM-SHA-1" || mechs[1] != "SCRAM-SHA-256" {
		t.Fatalf("saslSupportedMechs = %v", reply)
	}
	reply, _ = rt(ctx, "admin", bson.D{{Key: "hello", Value: 1}, {Key: "saslSupportedMechs", Value: "test.nobody"}})
	if lookupField(reply, "saslSupportedMechs") != nil {
		t.Fatalf("mechanisms of an unknown user: %v", reply)
	}
	// Speculative: the driver's saslStart rides in hello.
	spec := func(ctx context.Context, db string, cmd bson.D) (bson.D, error) {
		if cmd[0].Key != "saslStart" {
			return rt(ctx, db, cmd)
		}
		r, err := rt(ctx, "admin", bson.D{{Key: "hello", Value: 1},
			{Key: "speculativeAuthenticate", Value: append(cmd, bson.E{Key: "db", Value: db})}})
		if err != nil {
			return nil, err
		}
		sa, ok := lookupField(r, "speculativeAuthenticate").(bson.D)
		if !ok {
			t.Fatalf("hello did not answer speculativeAuthenticate: %v", r)
		}
		return append(sa, bson.E{Key: "ok", Value: 1.0}), nil
	}
	if err := auth.Authenticate(ctx, spec, auth.Credential{User: "hal", DB: "test", Password: "hal-pw"}); err != nil {
		t.Fatalf("speculative authentication: %v", err)
	}
	reply, _ = rt(ctx, "test", bson.D{{Key: "find", Value: "c"}})
	if lookupField(reply, "ok") != 1.0 {
		t.Fatalf("after speculative login: %v", reply)
	}
}

// TestKeyFileMembersOverTLS: with TLS required, a member dials with
// tlsconf.Client (its certificate, the set's CA) and proves the key over
// that connection.
func TestKeyFileMembersOverTLS(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte("bWVtYmVycyBvdmVyIFRMUw=="), 0o600); err != nil {
		t.Fatal(err)
	}
	p := newPKI(t)
	opts := tlsconf.Options{CertificateKeyFile: p.ServerFile, CAFile: p.CAFile}
	s, _ := startAuthServerTLS(t, app.Config{Security: app.Security{KeyFile: path, TLSMode: server.TLSRequire, TLS: opts}}, p.clientTLS(true))
	s.uri += "&tls=true&tlsCAFile=" + p.CAFile + "&tlsCertificateKeyFile=" + p.ClientFile
	memberTLS, err := tlsconf.Client(tlsconf.Options{CertificateKeyFile: p.ClientFile, CAFile: p.CAFile}, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	kf := s.app.Auth().KeyFile()
	if kf == nil {
		t.Fatal("the server does not expose its keyFile")
	}
	nc, rt, err := auth.Dial(ctxT(t), s.app.Addr().String(), memberTLS, kf.Credential())
	if err != nil {
		t.Fatalf("member over TLS: %v", err)
	}
	defer nc.Close()
	if _, plain, err := auth.Dial(ctxT(t), s.app.Addr().String(), nil, kf.Credential()); err == nil {
		t.Fatalf("a plaintext member got through requireTLS: %v", plain)
	}
	reply, err := rt(context.Background(), "admin", bson.D{{Key: "serverStatus", Value: 1}})
	if err != nil || lookupField(reply, "ok") != 1.0 {
		t.Fatalf("member command: %v %v", reply, err)
	}
}

// TestSecurityInCmdLineOpts: getCmdLineOpts shows the settings as mongod's
// config file names them, the key file's path but not the key.
func TestSecurityInCmdLineOpts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte("c2VjcmV0a2V5"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := startAuthServer(t, app.Config{Security: app.Security{KeyFile: path}})
	out := runCmd(t, connect(t, s).Database("admin"), bson.D{{Key: "getCmdLineOpts", Value: 1}})
	sec := field(t, field(t, out, "parsed").(bson.D), "security").(bson.D)
	if field(t, sec, "authorization") != "enabled" || field(t, sec, "keyFile") != path {
		t.Fatalf("security = %v", sec)
	}
	raw, _ := bson.Marshal(out)
	if strings.Contains(string(raw), "c2VjcmV0a2V5") {
		t.Fatal("getCmdLineOpts shows the key")
	}
}
