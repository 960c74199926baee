package commands

import (
	"context"
	"strings"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// A router sends a shard its part of a client's bulkWrite with the
// routing versions of each namespace in that namespace's nsInfo entry
// (mongos's NamespaceInfoEntry: shardVersion, databaseVersion), since
// one command-level version cannot name several collections. The shard
// checks them all before it runs an op: a stale one fails the whole
// command with StaleConfig (or StaleDbVersion), nothing written, and the
// router refreshes and sends the part again. Each versioned namespace's
// ops then run with its ownership filter and shard key guard, as a
// routed update or delete does (shardside.go).

// enterRouted admits every nsInfo entry that carries versions
// (shardcmds.Admit), and keeps each sharded namespace's context for its
// ops; release ends the namespaces' in-flight counts for migrations.
func (b *bulkWrite) enterRouted() (release func(), err error) {
	var leaves []func()
	release = func() {
		for _, leave := range leaves {
			leave()
		}
	}
	_, retryable := bsonutil.Field(b.r.body, "txnNumber")
	for i, entry := range b.nsInfo {
		db, _, _ := strings.Cut(b.ns[i], ".")
		adm, err := b.h.shard.Admit(b.r.ctx, db, b.ns[i], entry, retryable)
		leaves = append(leaves, adm.Leave)
		if err != nil {
			release()
			return func() {}, err
		}
		if adm.Filtered {
			if b.routed == nil {
				b.routed = map[string]context.Context{}
			}
			b.routed[b.ns[i]] = adm.Ctx
		}
	}
	return release, nil
}

// contextFor is the context an op on db.coll runs in: its namespace's
// routed context, or the command's.
func (b *bulkWrite) contextFor(db, coll string) context.Context {
	if ctx, ok := b.routed[db+"."+coll]; ok {
		return ctx
	}
	return b.r.ctx
}
