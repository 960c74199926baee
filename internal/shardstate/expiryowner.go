package shardstate

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Orphans and the expiry machinery (docs/design/0014, "Orphans and
// expiry"): the docstore asks, before the TTL monitor or an eviction
// changes a document on its own, whether this member owns it; an
// orphan's change is silent, its owner's reports it. Each document must
// be reported by exactly one shard, so the answer is held whenever it
// may be about to change under the member: while the member's placement
// of the namespace is being committed (the donor's critical section, the
// recipient's from _recvChunkCommit until it has refreshed at
// _recvChunkReleaseCritSec), before a new primary has set up the
// critical sections its records show, and while the namespace's
// placement is not known yet (it is then read in the background).

// expiryRefreshTimeout bounds the background read of a namespace's
// placement the expiry machinery waits for.
const expiryRefreshTimeout = 10 * time.Second

// ExpiryOwner answers docstore.Ownership for this shard member. It
// reads no storage: the docstore asks it under a collection's locks.
func (m *Migrations) ExpiryOwner(ns string) (owns func(bson.D) bool, held bool) {
	if _, err := m.opts.State.Identity(); err != nil {
		return nil, false // not a shard yet: nothing it stores is anyone else's
	}
	if m.atCommit(ns) {
		return nil, true
	}
	return m.opts.State.expiryFilter(ns)
}

// atCommit reports whether ns's placement may be changing under this
// member: it has not loaded its recorded critical sections yet, it
// holds ns's critical section as a donor, or it received ns's commit
// as a recipient and has not refreshed since.
func (m *Migrations) atCommit(ns string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.loaded || m.critical[ns] {
		return true
	}
	for _, rc := range m.receivers {
		if rc.req.Namespace == ns && rc.committing.Load() {
			return true
		}
	}
	return false
}

// expiryFilter is ns's ownership test from the cached routing table:
// nil when ns is not sharded; held while the placement is not cached,
// which starts a background refresh.
func (s *State) expiryFilter(ns string) (owns func(bson.D) bool, held bool) {
	entry, known := lookup(s, s.colls, ns)
	if !known {
		s.refreshInBackground(ns)
		return nil, true
	}
	if entry.value == nil {
		return nil, false
	}
	return NewFilter(entry.value, s.shardName()).Owns, false
}

// refreshInBackground reads ns's placement unless a read of it is
// already under way; a failed read is tried again at the next ask.
func (s *State) refreshInBackground(ns string) {
	s.mu.Lock()
	if s.refreshing[ns] {
		s.mu.Unlock()
		return
	}
	s.refreshing[ns] = true
	s.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), expiryRefreshTimeout)
		defer cancel()
		_, _ = s.Refresh(ctx, ns) // the cache holds the answer; a failure leaves it empty
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.refreshing, ns)
	}()
}
