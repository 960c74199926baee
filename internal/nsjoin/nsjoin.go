// Package nsjoin joins a database's and a collection's names into the
// namespace string once, and shares it (and the same string boxed in an
// interface) with every request and cursor that names it.
package nsjoin

import (
	"strings"
	"sync"
)

// maxNamespaces bounds the namespaces a Cache keeps joined: enough for
// a deployment's collections, and no more however many names clients
// send.
const maxNamespaces = 4096

// Cache holds the "db.coll" strings requests have named, joined once:
// every command's namespace (currentOp's, a cursor's) cost a
// concatenation otherwise, and a cursor reply's ns field boxing it in an
// interface. The zero value is ready.
type Cache struct {
	mu     sync.RWMutex
	joined map[nsKey]Joined
}

type nsKey struct{ db, coll string }

// Joined is a namespace (S) and the same string in an interface (V, nil
// when it was not kept: then the caller boxes S). Both are immutable, so
// every request and cursor can share them.
type Joined struct {
	S string
	V any
}

// Join is db + "." + coll, and the same in an interface.
func (n *Cache) Join(db, coll string) Joined {
	k := nsKey{db, coll}
	n.mu.RLock()
	ns, ok := n.joined[k]
	full := len(n.joined) >= maxNamespaces
	n.mu.RUnlock()
	if ok {
		return ns
	}
	ns.S = db + "." + coll
	if full {
		return ns
	}
	ns.V = ns.S
	n.keep(k, ns)
	return ns
}

// keep remembers ns for k. The key is cloned: a request's strings may
// be views of a buffer the connection reuses once it has replied.
func (n *Cache) keep(k nsKey, ns Joined) {
	k = nsKey{strings.Clone(k.db), strings.Clone(k.coll)}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.joined == nil {
		n.joined = make(map[nsKey]Joined)
	}
	if len(n.joined) < maxNamespaces {
		n.joined[k] = ns
	}
}
