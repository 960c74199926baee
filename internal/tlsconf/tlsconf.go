// Package tlsconf builds the server's TLS configuration from mongod's
// settings: a PEM file holding the certificate and its key, and a CA file
// against which client certificates are verified.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Options are mongod's net.tls settings.
type Options struct {
	CertificateKeyFile string // certificate chain and private key, PEM
	CAFile             string // CAs for client certificates, PEM; empty: none asked
	// AllowConnectionsWithoutCertificates accepts clients that present no
	// certificate even with a CAFile (those that do are still verified).
	AllowConnectionsWithoutCertificates bool
}

// Server returns the TLS configuration: TLS 1.2 and 1.3 only; with a
// CAFile, client certificates are required and verified.
func Server(o Options) (*tls.Config, error) {
	if o.CertificateKeyFile == "" {
		return nil, errors.New("need tlsCertificateKeyFile when TLS is enabled")
	}
	pem, err := os.ReadFile(o.CertificateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("tlsCertificateKeyFile: %w", err)
	}
	cert, err := tls.X509KeyPair(pem, pem)
	if err != nil {
		return nil, fmt.Errorf("tlsCertificateKeyFile %s: %w", o.CertificateKeyFile, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if o.CAFile == "" {
		return cfg, nil
	}
	pool, err := loadPool(o.CAFile)
	if err != nil {
		return nil, err
	}
	cfg.ClientCAs = pool
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	if o.AllowConnectionsWithoutCertificates {
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// Client returns a configuration for connecting to a server: it trusts
// the CAFile (the system's roots without one) and presents the
// certificate of CertificateKeyFile when one is given.
func Client(o Options, serverName string) (*tls.Config, error) {
	out := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if o.CertificateKeyFile != "" {
		cfg, err := Server(Options{CertificateKeyFile: o.CertificateKeyFile})
		if err != nil {
			return nil, err
		}
		out.Certificates = cfg.Certificates
	}
	if o.CAFile != "" {
		var err error
		if out.RootCAs, err = loadPool(o.CAFile); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func loadPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tlsCAFile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tlsCAFile %s: no certificate found", path)
	}
	return pool, nil
}
