package commands

import (
	"strings"
	"sync"
)

// maxNamespaces bounds the namespaces a Handler keeps joined: enough for
// a deployment's collections, and no more however many names clients
// send.
const maxNamespaces = 4096

// namespaces are the "db.coll" strings requests have named, joined once:
// every command's namespace (currentOp's, a cursor's) cost a
// concatenation otherwise, and a cursor reply's ns field boxing it in an
// interface. The zero value is ready.
type namespaces struct {
	mu     sync.RWMutex
	joined map[nsKey]joinedNS
}

type nsKey struct{ db, coll string }

// joinedNS is a namespace and the same string in an interface. Both are
// immutable, so every request and cursor can share them.
type joinedNS struct {
	s string
	v any
}

// join is db + "." + coll, and the same in an interface (nil when it is
// not kept: then the caller boxes it).
func (n *namespaces) join(db, coll string) joinedNS {
	k := nsKey{db, coll}
	n.mu.RLock()
	ns, ok := n.joined[k]
	full := len(n.joined) >= maxNamespaces
	n.mu.RUnlock()
	if ok {
		return ns
	}
	ns.s = db + "." + coll
	if full {
		return ns
	}
	ns.v = ns.s
	n.keep(k, ns)
	return ns
}

// keep remembers ns for k. The key is cloned: a request's strings may
// be views of a buffer the connection reuses once it has replied.
func (n *namespaces) keep(k nsKey, ns joinedNS) {
	k = nsKey{strings.Clone(k.db), strings.Clone(k.coll)}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.joined == nil {
		n.joined = make(map[nsKey]joinedNS)
	}
	if len(n.joined) < maxNamespaces {
		n.joined[k] = ns
	}
}
