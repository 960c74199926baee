package main

import (
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/internal/server"
)

func TestSecurityFlags(t *testing.T) {
	o, err := parseFlags([]string{"--auth", "--keyFile", "/k", "--tlsMode", "requireTLS",
		"--tlsCertificateKeyFile", "/s.pem", "--tlsCAFile", "/ca.pem"})
	if err != nil {
		t.Fatal(err)
	}
	sec := o.cfg.Security
	if !sec.Auth || sec.KeyFile != "/k" || sec.TLSMode != server.TLSRequire ||
		sec.TLS.CertificateKeyFile != "/s.pem" || sec.TLS.CAFile != "/ca.pem" {
		t.Fatalf("security = %+v", sec)
	}
	if o, _ := parseFlags(nil); o.cfg.Security.Auth || o.cfg.Security.TLSMode != server.TLSDisabled {
		t.Fatalf("defaults = %+v", o.cfg.Security)
	}
	if _, err := parseFlags([]string{"--tlsMode", "sometimes"}); err == nil || !strings.Contains(err.Error(), "tlsMode") {
		t.Fatalf("bad --tlsMode: %v", err)
	}
}
