package docstore

import "sync"

// txnIntents is who holds each key an open transaction wrote and has not
// committed: a document, or a unique index value. A second transaction
// writing one fails at once with WriteConflict, as on mongod, instead of
// running on to lose at its commit (first committer wins still decides
// between a transaction and the writes outside any).
type txnIntents struct {
	mu     sync.Mutex
	owners map[string]*Txn
}

// claim records x as the holder of keys, unless another transaction
// holds one of them; then it claims none and reports false.
func (in *txnIntents) claim(x *Txn, keys [][]byte) bool {
	if len(keys) == 0 {
		return true
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, k := range keys {
		if owner, ok := in.owners[string(k)]; ok && owner != x {
			return false
		}
	}
	if in.owners == nil {
		in.owners = map[string]*Txn{}
	}
	for _, k := range keys {
		in.owners[string(k)] = x
	}
	return true
}

// release drops x's claims on keys, once x committed or aborted.
func (in *txnIntents) release(x *Txn, keys [][]byte) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, k := range keys {
		if in.owners[string(k)] == x {
			delete(in.owners, string(k))
		}
	}
}
