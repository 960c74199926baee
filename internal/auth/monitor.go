package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"errors"
	"strings"
	"sync"

	"github.com/xdg-go/scram"
)

// monitorNeed is what reading the server's figures over HTTP takes: the
// serverStatus action on the cluster, which clusterMonitor (and the roles
// above it) grant, as mongod asks for the same figures.
func monitorNeed() Need { return need(clusterTarget(), "serverStatus") }

// monitorCacheSize bounds the remembered HTTP logins: a scraper repeats
// one login every few seconds, and each check costs a key derivation.
const monitorCacheSize = 64

// monitorLogins remembers the HTTP logins already checked, by a digest of
// the name and password (never the password itself), until users or roles
// change.
type monitorLogins struct {
	mu  sync.Mutex
	gen uint64
	ok  map[[sha256.Size]byte]bool
}

// MonitorLogin names an HTTP basic user: "name" is a user of admin,
// "name@db" one of db.
func MonitorLogin(login string) UserName {
	if i := strings.LastIndexByte(login, '@'); i > 0 && i < len(login)-1 {
		return UserName{User: login[:i], DB: login[i+1:]}
	}
	return UserName{User: login, DB: adminDB}
}

// The answers of CheckMonitorLogin.
var (
	ErrBadLogin     = errors.New("auth: unknown user or wrong password")
	ErrNotPermitted = errors.New("auth: the user lacks the serverStatus privilege (clusterMonitor)")
)

// CheckMonitorLogin checks an HTTP basic login to the metrics endpoint:
// nil when the password is right and the user may read the server's
// figures.
func (m *Manager) CheckMonitorLogin(login, password string) error {
	key := sha256.Sum256([]byte(login + "\x00" + password))
	gen := m.gen.Load()
	if m.monitor.remembered(key, gen) {
		return nil
	}
	n := MonitorLogin(login)
	u := m.lookupUser(n)
	if u == nil || !passwordMatches(u, password) {
		return ErrBadLogin
	}
	if !m.userMay(n, monitorNeed()) {
		return ErrNotPermitted
	}
	m.monitor.remember(key, gen)
	return nil
}

// MayMonitorWithCertificate reports whether the subject of a verified
// client certificate is a $external user who may read the figures.
func (m *Manager) MayMonitorWithCertificate(cert *x509.Certificate) bool {
	n := UserName{User: cert.Subject.String(), DB: externalDB}
	return m.lookupUser(n) != nil && m.userMay(n, monitorNeed())
}

func (m *Manager) userMay(n UserName, want Need) bool {
	return m.allowed(&Session{user: &n}, want)
}

// passwordMatches derives u's stored key from password, with the salt and
// iterations of the strongest mechanism u has, and compares it.
func passwordMatches(u *User, password string) bool {
	for _, mech := range []string{MechSHA256, MechSHA1} {
		s := u.Credentials[mech]
		if s == nil {
			continue
		}
		client, err := passwordClient(mech, u.Name.User, password, false)
		if err != nil {
			return false
		}
		got, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(s.Salt), Iters: s.Iterations})
		return err == nil && subtle.ConstantTimeCompare(got.StoredKey, s.StoredKey) == 1
	}
	return false
}

func (l *monitorLogins) remembered(key [sha256.Size]byte, gen uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen == gen && l.ok[key]
}

func (l *monitorLogins) remember(key [sha256.Size]byte, gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gen != gen || len(l.ok) >= monitorCacheSize {
		l.gen, l.ok = gen, map[[sha256.Size]byte]bool{}
	}
	l.ok[key] = true
}
