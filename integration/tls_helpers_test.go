package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testPKI is a CA with a server and a client certificate, written as PEM
// files the way mongod and the clients take them.
type testPKI struct {
	dir        string
	CAFile     string // the CA certificate
	ServerFile string // server certificate and key
	ClientFile string // client certificate and key
	pool       *x509.CertPool
	client     tls.Certificate
}

func newPKI(t testing.TB) *testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, caCert, caDER := newCert(t, nil, nil, &x509.Certificate{
		Subject: pkix.Name{CommonName: "Mayfly Test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	})
	p := &testPKI{dir: dir, pool: x509.NewCertPool()}
	p.pool.AddCert(caCert)
	p.CAFile = writePEM(t, dir, "ca.pem", pemBlock("CERTIFICATE", caDER))
	srvKey, _, srvDER := newCert(t, caKey, caCert, &x509.Certificate{
		Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	})
	p.ServerFile = writePEM(t, dir, "server.pem", pemBlock("CERTIFICATE", srvDER), keyPEM(t, srvKey))
	cliKey, _, cliDER := newCert(t, caKey, caCert, &x509.Certificate{
		Subject: pkix.Name{CommonName: "client"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	})
	p.ClientFile = writePEM(t, dir, "client.pem", pemBlock("CERTIFICATE", cliDER), keyPEM(t, cliKey))
	var err error
	if p.client, err = tls.LoadX509KeyPair(p.ClientFile, p.ClientFile); err != nil {
		t.Fatal(err)
	}
	return p
}

// clientTLS trusts the CA and, when withCert, presents the client
// certificate.
func (p *testPKI) clientTLS(withCert bool) *tls.Config {
	cfg := &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS12}
	if withCert {
		cfg.Certificates = []tls.Certificate{p.client}
	}
	return cfg
}

func newCert(t testing.TB, parentKey *ecdsa.PrivateKey, parent *x509.Certificate, tmpl *x509.Certificate) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

func keyPEM(t testing.TB, key *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pemBlock("PRIVATE KEY", der)
}

func writePEM(t testing.TB, dir, name string, blocks ...[]byte) string {
	t.Helper()
	var all []byte
	for _, b := range blocks {
		all = append(all, b...)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, all, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
