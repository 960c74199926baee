package auth

import (
	"net"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Conn is what auth needs of a client connection (server.Conn has it).
type Conn interface {
	Value(key string) any
	SetValue(key string, v any)
	RemoteAddr() string
}

const sessionKey = "auth.session"

// Session is one connection's authentication state. A connection runs
// one command at a time, so it needs no lock.
type Session struct {
	user *UserName
	// name is user's String, made once at the login: every command of an
	// authenticated connection asks for it (UserOf).
	name string
	conv *conversation
	// privileges are the user's, resolved at gen; decisions memoises
	// checks until users or roles change.
	gen        uint64
	roles      []RoleName
	privileges []Privilege
	decisions  map[Need]bool
	// recent are the last few decisions, looked at before the map: a
	// client's commands ask the same few needs over and over (find,
	// update, insert and remove on one collection), and comparing them
	// in place costs less than hashing them.
	recent     [4]decision
	nextRecent int
}

// decision is one memoised check; a zero one (no action) is unused.
type decision struct {
	need Need
	ok   bool
}

func sessionOf(c Conn) *Session {
	if s, ok := c.Value(sessionKey).(*Session); ok {
		return s
	}
	s := &Session{}
	c.SetValue(sessionKey, s)
	return s
}

// User returns the authenticated user, if any.
func (s *Session) User() (UserName, bool) {
	if s.user == nil {
		return UserName{}, false
	}
	return *s.user, true
}

// refresh recomputes the user's privileges when users or roles changed
// since they were last resolved.
func (m *Manager) refresh(s *Session) {
	gen := m.gen.Load()
	if s.decisions != nil && s.gen == gen {
		return
	}
	s.gen, s.decisions, s.roles, s.privileges = gen, map[Need]bool{}, nil, nil
	s.recent, s.nextRecent = [len(s.recent)]decision{}, 0
	if s.user == nil {
		return
	}
	u := m.lookupUser(*s.user)
	if u == nil {
		return
	}
	seen := map[RoleName]bool{}
	s.privileges = m.privilegesOf(u.Roles, seen)
	s.roles = setToList(seen)
}

func (m *Manager) allowed(s *Session, n Need) bool {
	m.refresh(s)
	for _, d := range s.recent {
		if d.need.Action != "" && d.need == n {
			return d.ok
		}
	}
	ok, done := s.decisions[n]
	if !done {
		ok = s.decide(n)
	}
	s.recent[s.nextRecent] = decision{need: n, ok: ok}
	s.nextRecent = (s.nextRecent + 1) % len(s.recent)
	return ok
}

// decide checks n against the session's privileges and memoises it.
func (s *Session) decide(n Need) bool {
	ok := false
	for _, p := range s.privileges {
		if p.allows(n) {
			ok = true
			break
		}
	}
	if len(s.decisions) >= maxDecisions {
		clear(s.decisions)
	}
	s.decisions[n] = ok
	return ok
}

// maxDecisions bounds a session's memo: a client touching ever new
// namespaces must not grow it without end.
const maxDecisions = 4096

// isLoopback reports whether a client address is on the loopback
// interface (the localhost exception applies only there).
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func requiresAuthentication(name string) error {
	return mongoerr.Newf(mongoerr.Unauthorized, "Command %s requires authentication", name)
}
