package integration

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/metrics"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/tlsconf"
)

// httpGet fetches path from the metrics endpoint with basic credentials
// (when login is not empty) over client (plain HTTP when nil TLS).
func httpGet(t *testing.T, client *http.Client, base, path, login, password string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if login != "" {
		req.SetBasicAuth(login, password)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp
}

// TestHTTPEndpointAsksForClusterMonitor: with --auth, every path of the
// endpoint answers only a user who holds clusterMonitor, by HTTP basic
// credentials; anyone else gets 401 (no or wrong credentials, with the
// basic challenge) or 403 (a user without the privilege).
func TestHTTPEndpointAsksForClusterMonitor(t *testing.T) {
	s, logs := startAuthServer(t, app.Config{HTTPAddr: "127.0.0.1:0"})
	root := connect(t, s)
	createUser(t, root, "admin", "monitor", "m0n-pw", bson.A{"clusterMonitor"})
	createUser(t, root, "test", "ops", "ops-pw", bson.A{bson.D{{Key: "role", Value: "clusterMonitor"}, {Key: "db", Value: "admin"}}})
	createUser(t, root, "test", "app", "app-pw", bson.A{"readWrite"})
	base := "http://" + s.app.HTTPAddr()
	client := &http.Client{Timeout: 10 * time.Second}
	rows := []struct {
		login, password string
		want            int
	}{
		{"", "", http.StatusUnauthorized},
		{"monitor", "wrong", http.StatusUnauthorized},
		{"nobody", "m0n-pw", http.StatusUnauthorized},
		{"app@test", "app-pw", http.StatusForbidden},
		{"monitor", "m0n-pw", http.StatusOK},
		{"monitor@admin", "m0n-pw", http.StatusOK},
		{"ops@test", "ops-pw", http.StatusOK},
		{rootUser, rootPwd, http.StatusOK},
	}
	for _, path := range metrics.Paths() {
		for _, row := range rows {
			resp := httpGet(t, client, base, path, row.login, row.password)
			if resp.StatusCode != row.want {
				t.Errorf("GET %s as %q: %d, want %d", path, row.login, resp.StatusCode, row.want)
			}
			if row.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("GET %s as %q: no basic challenge (%q)", path, row.login, resp.Header.Get("WWW-Authenticate"))
			}
		}
	}
	// A dropped user's remembered login stops working at once.
	runCmd(t, root.Database("admin"), bson.D{{Key: "dropUser", Value: "monitor"}})
	if resp := httpGet(t, client, base, "/metrics", "monitor", "m0n-pw"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a dropped user still reads /metrics: %d", resp.StatusCode)
	}
	for _, secret := range []string{"m0n-pw", "ops-pw", "app-pw"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("a password reached the log: %q", secret)
		}
	}
}

// TestHTTPEndpointOverTLS: with TLS configured the endpoint serves HTTPS
// with the server's certificate, and takes either a client certificate
// whose subject is a $external clusterMonitor user or basic credentials.
func TestHTTPEndpointOverTLS(t *testing.T) {
	p := newPKI(t)
	cfg := app.Config{HTTPAddr: "127.0.0.1:0", Security: app.Security{TLSMode: server.TLSAllow, TLS: tlsconf.Options{
		CertificateKeyFile: p.ServerFile, CAFile: p.CAFile}}}
	s, _ := startAuthServerTLS(t, cfg, p.clientTLS(true))
	s.uri += "&tls=true&tlsCAFile=" + p.CAFile + "&tlsCertificateKeyFile=" + p.ClientFile
	root := connect(t, s)
	createUser(t, root, "admin", "monitor", "m0n-pw", bson.A{"clusterMonitor"})
	base := "https://" + s.app.HTTPAddr()
	withCert := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: p.clientTLS(true)}}
	noCert := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: p.clientTLS(false)}}

	if resp := httpGet(t, withCert, base, "/metrics", "", ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a certificate of no user: %d, want 403", resp.StatusCode)
	}
	runCmd(t, root.Database("$external"), bson.D{{Key: "createUser", Value: "CN=client"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "clusterMonitor"}, {Key: "db", Value: "admin"}}}}})
	for _, path := range metrics.Paths() {
		if resp := httpGet(t, withCert, base, path, "", ""); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s with the client certificate: %d", path, resp.StatusCode)
		}
		if resp := httpGet(t, noCert, base, path, "monitor", "m0n-pw"); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s with basic credentials over TLS: %d", path, resp.StatusCode)
		}
		if resp := httpGet(t, noCert, base, path, "", ""); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with nothing: %d", path, resp.StatusCode)
		}
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + s.app.HTTPAddr() + "/metrics"); err == nil && resp.StatusCode == http.StatusOK {
		t.Error("the TLS endpoint answered plain HTTP")
	}
}

// TestHTTPEndpointExposure: the endpoint never shows its figures to the
// network unasked. Without access control it stays on loopback unless
// --http-allow-remote; with access control and no TLS it stays on
// loopback, so that passwords never cross the network in clear.
func TestHTTPEndpointExposure(t *testing.T) {
	rows := []struct {
		name    string
		cfg     app.Config
		refused string
	}{
		{"open on loopback", app.Config{HTTPAddr: "127.0.0.1:0"}, ""},
		{"open on every address", app.Config{HTTPAddr: "0.0.0.0:0"}, "is not a loopback address and access control is off"},
		{"open on every address, allowed", app.Config{HTTPAddr: "0.0.0.0:0", HTTPAllowRemote: true}, ""},
		{"auth without TLS on every address", app.Config{HTTPAddr: "0.0.0.0:0", HTTPAllowRemote: true,
			Security: app.Security{Auth: true}}, "passwords, which must not cross the network in clear"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			cfg := row.cfg
			cfg.Addr, cfg.InMemory = "127.0.0.1:0", true
			a, err := app.Start(cfg)
			if row.refused == "" {
				if err != nil {
					t.Fatalf("start: %v", err)
				}
				_ = a.Shutdown(ctxT(t))
				return
			}
			if err == nil {
				_ = a.Shutdown(ctxT(t))
				t.Fatal("the start was not refused")
			}
			if !strings.Contains(err.Error(), row.refused) {
				t.Fatalf("refused with %q, want %q", err, row.refused)
			}
		})
	}
	t.Run("with TLS on every address", func(t *testing.T) {
		p := newPKI(t)
		s, _ := startAuthServerTLS(t, app.Config{HTTPAddr: "0.0.0.0:0", Security: app.Security{TLSMode: server.TLSAllow,
			TLS: tlsconf.Options{CertificateKeyFile: p.ServerFile, CAFile: p.CAFile}}}, p.clientTLS(true))
		s.uri += "&tls=true&tlsCAFile=" + p.CAFile + "&tlsCertificateKeyFile=" + p.ClientFile
		port := s.app.HTTPAddr()[strings.LastIndexByte(s.app.HTTPAddr(), ':'):]
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.pool}}}
		if resp := httpGet(t, client, "https://127.0.0.1"+port, "/metrics", rootUser, rootPwd); resp.StatusCode != http.StatusOK {
			t.Fatalf("root over TLS: %d", resp.StatusCode)
		}
	})
}
