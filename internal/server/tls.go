package server

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/mayflydb/mayfly/internal/wire"
)

// TLSMode is mongod's net.tls.mode.
type TLSMode int

// The modes, as mongod names them.
const (
	TLSDisabled TLSMode = iota // plaintext only
	TLSAllow                   // plaintext, and TLS from clients that start it
	TLSPrefer                  // the same for clients; members would use TLS
	TLSRequire                 // TLS only
)

// ParseTLSMode reads --tlsMode.
func ParseTLSMode(s string) (TLSMode, error) {
	switch s {
	case "", "disabled":
		return TLSDisabled, nil
	case "allowTLS":
		return TLSAllow, nil
	case "preferTLS":
		return TLSPrefer, nil
	case "requireTLS":
		return TLSRequire, nil
	}
	return 0, fmt.Errorf("unsupported value for tlsMode %q (disabled, allowTLS, preferTLS or requireTLS)", s)
}

func (m TLSMode) String() string {
	return [...]string{"disabled", "allowTLS", "preferTLS", "requireTLS"}[m]
}

// looksLikeTLS reports whether a connection's first bytes are a TLS
// handshake record (type 22, version 3.x) rather than a message header,
// whose first four bytes are its length: a request that long (over 64 KiB
// for versions 3.1 and up) is never a client's first.
func looksLikeTLS(b []byte) bool {
	return len(b) >= 3 && b[0] == 0x16 && b[1] == 0x03 && b[2] >= 0x01 && b[2] <= 0x04
}

// secure settles the connection's transport before its first request:
// it sniffs the first bytes, starts TLS when the client does and the mode
// allows, and turns away what the mode forbids with a log line that names
// TLS. It reports whether the connection can go on.
func (c *Conn) secure() bool {
	// The first bytes are a request's: an idle client is timed out here
	// as between requests.
	if err := c.waitForRequest(); err != nil {
		c.logReadEnd(err)
		return false
	}
	head, ok := c.peekHead()
	if !ok {
		return false
	}
	if c.srv.cfg.TLS == nil || c.srv.cfg.TLSMode == TLSDisabled {
		return c.refuseTLSOnPlaintext(head)
	}
	switch {
	case looksLikeTLS(head):
		return c.startTLS()
	case c.srv.cfg.TLSMode == TLSRequire:
		c.srv.log.Warn("plaintext connection refused: this server requires TLS (--tlsMode requireTLS); "+
			"connect with tls=true", "conn", c.id, "remote", c.remote)
		return false
	}
	return true
}

// refuseTLSOnPlaintext closes a connection whose client starts TLS on a
// server without it, instead of reading the handshake as a malformed
// message.
func (c *Conn) refuseTLSOnPlaintext(head []byte) bool {
	if looksLikeTLS(head) {
		c.srv.log.Warn("TLS handshake received but this server has TLS disabled; closing. "+
			"Start it with --tlsMode and --tlsCertificateKeyFile, or connect without tls=true",
			"conn", c.id, "remote", c.remote)
		return false
	}
	return true
}

// peekHead waits, idle (so Shutdown may close it), for the connection's
// first bytes.
func (c *Conn) peekHead() ([]byte, bool) {
	c.state.Store(stateIdle)
	if c.srv.shutdown.Load() {
		return nil, false
	}
	head, err := c.br.Peek(3)
	if err != nil {
		c.logReadEnd(err)
		return nil, false
	}
	return head, c.state.CompareAndSwap(stateIdle, stateActive)
}

func (c *Conn) startTLS() bool {
	tc := tls.Server(bufferedConn{Conn: c.nc, r: c.br}, c.srv.cfg.TLS)
	_ = c.nc.SetDeadline(time.Now().Add(c.srv.cfg.MessageTimeout))
	if err := tc.Handshake(); err != nil {
		c.srv.log.Warn("TLS handshake failed; closing", "conn", c.id, "remote", c.remote, "err", err)
		return false
	}
	_ = c.nc.SetDeadline(time.Time{})
	c.tc = tc
	c.br = bufio.NewReaderSize(tc, ioBufferSize)
	c.rd = wire.NewReader(c.br, c.srv.codec)
	c.wr = wire.NewWriter(deadlineWriter{c}, c.srv.codec)
	return true
}

// bufferedConn reads first what sniffing already buffered.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (b bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// PeerCertificate returns the client's certificate once verified against
// the CA file, or nil (no TLS, no certificate, or none asked).
func (c *Conn) PeerCertificate() *x509.Certificate {
	if c.tc == nil {
		return nil
	}
	st := c.tc.ConnectionState()
	if len(st.VerifiedChains) == 0 || len(st.PeerCertificates) == 0 {
		return nil
	}
	return st.PeerCertificates[0]
}

// TLS reports whether the connection runs over TLS.
func (c *Conn) TLS() bool { return c.tc != nil }
