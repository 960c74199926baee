package commands

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/writeops"
)

// A router sends a shard its part of a client's bulkWrite with the
// routing versions of each namespace in that namespace's nsInfo entry
// (mongos's NamespaceInfoEntry: shardVersion, databaseVersion), since
// one command-level version cannot name several collections. The shard
// checks them all before it runs an op: a stale one fails the whole
// command with StaleConfig (or StaleDbVersion), nothing written, and the
// router refreshes and sends the part again. Each versioned namespace's
// ops then run with its ownership filter and shard key guard, as a
// routed update or delete does (shardversion.go).

// enterRouted checks the versions of every nsInfo entry that carries
// them, and keeps each sharded namespace's context for its ops; release
// ends the namespaces' in-flight counts for migrations.
func (b *bulkWrite) enterRouted() (release func(), err error) {
	var leaves []func()
	release = func() {
		for _, leave := range leaves {
			leave()
		}
	}
	if b.h.deps.Shard == nil {
		return release, nil
	}
	for i, entry := range b.nsInfo {
		leave, err := b.enterNamespace(b.ns[i], entry)
		leaves = append(leaves, leave)
		if err != nil {
			release()
			return func() {}, err
		}
	}
	return release, nil
}

// enterNamespace checks one nsInfo entry's versions; a namespace the
// router targets by shard key gets its ownership filter and guard.
func (b *bulkWrite) enterNamespace(ns string, entry bson.D) (leave func(), err error) {
	leave = func() {}
	versions, err := routingVersions(entry)
	if err != nil || (versions.Shard == nil && versions.Database == nil) {
		return leave, err
	}
	if b.h.deps.Migrations != nil && versions.Shard != nil {
		if leave, err = b.h.deps.Migrations.Enter(b.r.ctx, ns); err != nil {
			return func() {}, err
		}
	}
	db, _, _ := strings.Cut(ns, ".")
	filter, err := b.h.deps.Shard.Check(b.r.ctx, db, ns, versions)
	if err != nil || filter == nil {
		return leave, err
	}
	ctx := docstore.WithOwnership(b.r.ctx, filter.Owns)
	_, retryable := bsonutil.Field(b.r.body, "txnNumber")
	ctx = writeops.WithShardKeyGuard(ctx, writeops.ShardKeyGuard{Changed: filter.KeyChanged, Owns: filter.Owns, Retryable: retryable})
	if b.routed == nil {
		b.routed = map[string]context.Context{}
	}
	b.routed[ns] = ctx
	return leave, nil
}

// contextFor is the context an op on db.coll runs in: its namespace's
// routed context, or the command's.
func (b *bulkWrite) contextFor(db, coll string) context.Context {
	if ctx, ok := b.routed[db+"."+coll]; ok {
		return ctx
	}
	return b.r.ctx
}
