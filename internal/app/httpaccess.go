package app

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/metrics"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/tlsconf"
)

// checkHTTPExposure refuses an HTTP endpoint that would show database
// names, counts and rates to the network: without access control it stays
// on loopback unless the operator says otherwise (as mongod binds only
// localhost by default), and with access control its passwords never cross
// the network in clear.
func checkHTTPExposure(cfg Config, addr net.Addr) error {
	if isLoopbackAddr(addr) {
		return nil
	}
	sec := cfg.Security
	switch {
	case !sec.Auth && sec.KeyFile == "" && !cfg.HTTPAllowRemote:
		return fmt.Errorf("app: --http-addr %s is not a loopback address and access control is off, so anyone who reaches it reads database names, counts and rates; "+
			"turn on --auth (the endpoint then asks for a clusterMonitor user), bind 127.0.0.1, or pass --http-allow-remote", addr)
	case (sec.Auth || sec.KeyFile != "") && sec.TLSMode == server.TLSDisabled:
		return fmt.Errorf("app: --http-addr %s is not a loopback address: with --auth the endpoint asks for passwords, which must not cross the network in clear; "+
			"configure TLS (--tlsMode requireTLS --tlsCertificateKeyFile) or bind 127.0.0.1", addr)
	}
	return nil
}

func isLoopbackAddr(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// httpAccess is who may read the endpoint: anyone with access control
// off; otherwise a user who holds clusterMonitor's serverStatus, by HTTP
// basic credentials or by the subject of a verified client certificate.
// With TLS configured the endpoint serves HTTPS with the server's
// certificate, and takes a client certificate when one is offered.
func (a *App) httpAccess() metrics.Access {
	var access metrics.Access
	if a.cfg.Security.TLSMode != server.TLSDisabled {
		access.TLS = a.httpTLS()
	}
	if a.auth == nil || !a.auth.Enabled() {
		return access
	}
	access.Authorize = a.authorizeHTTP
	return access
}

func (a *App) httpTLS() *tls.Config {
	cfg, err := tlsconf.Server(a.cfg.Security.TLS)
	if err != nil {
		// The same settings served the wire a moment ago.
		a.cfg.Logger.Error("metrics: TLS", "err", err)
		return nil
	}
	if cfg.ClientCAs != nil {
		// Scrapers log in with a password as often as with a certificate.
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg
}

func (a *App) authorizeHTTP(r *http.Request) int {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		if a.auth.MayMonitorWithCertificate(r.TLS.PeerCertificates[0]) {
			return http.StatusOK
		}
		return http.StatusForbidden
	}
	login, password, ok := r.BasicAuth()
	if !ok {
		return http.StatusUnauthorized
	}
	switch a.auth.CheckMonitorLogin(login, password) {
	case nil:
		return http.StatusOK
	case auth.ErrNotPermitted:
		return http.StatusForbidden
	}
	return http.StatusUnauthorized
}
