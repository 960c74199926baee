package main

import (
	"flag"

	"github.com/mayflydb/mayfly/internal/server"
)

// securityFlags are mongod's access-control and TLS options, by mongod's
// names.
func securityFlags(fs *flag.FlagSet, o *options) {
	sec := &o.cfg.Security
	fs.BoolVar(&sec.Auth, "auth", env("MAYFLY_AUTH", "") == "true", "require clients to authenticate (MAYFLY_AUTH=true)")
	fs.StringVar(&sec.KeyFile, "keyFile", env("MAYFLY_KEYFILE", ""), "replica set shared key file; implies --auth (MAYFLY_KEYFILE)")
	fs.StringVar(&o.tlsMode, "tlsMode", env("MAYFLY_TLS_MODE", "disabled"), "disabled, allowTLS, preferTLS or requireTLS (MAYFLY_TLS_MODE)")
	fs.StringVar(&sec.TLS.CertificateKeyFile, "tlsCertificateKeyFile", env("MAYFLY_TLS_CERTIFICATE_KEY_FILE", ""), "PEM file with the server certificate and key (MAYFLY_TLS_CERTIFICATE_KEY_FILE)")
	fs.StringVar(&sec.TLS.CAFile, "tlsCAFile", env("MAYFLY_TLS_CA_FILE", ""), "PEM file of CAs; clients must present a certificate they signed (MAYFLY_TLS_CA_FILE)")
	fs.BoolVar(&sec.TLS.AllowConnectionsWithoutCertificates, "tlsAllowConnectionsWithoutCertificates", false, "with --tlsCAFile, accept clients without a certificate")
}

func (o *options) securitySettings() error {
	mode, err := server.ParseTLSMode(o.tlsMode)
	if err != nil {
		return err
	}
	o.cfg.Security.TLSMode = mode
	return nil
}
