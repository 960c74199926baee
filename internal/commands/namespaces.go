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
// concatenation otherwise. The zero value is ready.
type namespaces struct {
	mu     sync.RWMutex
	joined map[nsKey]string
}

type nsKey struct{ db, coll string }

// join is db + "." + coll.
func (n *namespaces) join(db, coll string) string {
	k := nsKey{db, coll}
	n.mu.RLock()
	ns, ok := n.joined[k]
	full := len(n.joined) >= maxNamespaces
	n.mu.RUnlock()
	if ok {
		return ns
	}
	ns = db + "." + coll
	if !full {
		n.keep(k, ns)
	}
	return ns
}

// keep remembers ns for k. The key is cloned: a request's strings may
// be views of a buffer the connection reuses once it has replied.
func (n *namespaces) keep(k nsKey, ns string) {
	k = nsKey{strings.Clone(k.db), strings.Clone(k.coll)}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.joined == nil {
		n.joined = make(map[nsKey]string)
	}
	if len(n.joined) < maxNamespaces {
		n.joined[k] = ns
	}
}
