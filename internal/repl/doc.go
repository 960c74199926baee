// Package repl makes several Mayfly processes one replica set on etcd raft:
// the primary evaluates each write as a standalone server would and
// proposes the resulting storage batch; every member applies committed
// entries only, so nothing a client reads is ever rolled back. The raft
// log, its hard state and the applied index live in the same engine as the
// documents. Design notes: docs/design/0007-replica-sets.md.
//
// # A write, step by step
//
// The files follow a write in the order it travels:
//
//  1. The docstore builds the write as one storage batch and commits it
//     (docstore's tx.commit, internal/docstore/write.go). In a replica set
//     the batch is this package's: batch.Commit in engine.go encodes it as
//     a log entry (batch.entry; the format is entry.go, a TTL deletion's
//     compact keys expiry.go). The TTL monitor's batches go through
//     batch.CommitAsync instead, into the background lane.
//  2. node.startProposal in propose.go stamps the entry (nextTimestamp)
//     and queues it with a waiter; a background proposal is stamped later,
//     behind the clients' (takeBackground).
//  3. The raft loop (node.readyLoop in node.go) hands the queue to raft as
//     one append (flushProposals in propose.go), once the log writer holds
//     none of this member's appends, then takes raft's Ready (handleReady):
//     messages for other members go out at once (transport.go), the local
//     ones to the log writer and the applier.
//  4. The log writer (node.appendLoop in persist.go) writes every waiting
//     append in one synced pebble batch (logStore.appendAll in
//     logstore.go, which is also raft.Storage) and then delivers raft's
//     responses: the followers' acknowledgements, the leader's own.
//  5. Once a majority holds the entry, raft commits it; the applier
//     (node.applyLoop in apply.go, fed by an inbox the raft loop never
//     waits on, applyqueue.go) applies committed entries in groups
//     (applyEntries, applyGroup): the batch's writes, expiries and change
//     events in one unsynced storage batch with the applied index
//     (commitApplied).
//  6. node.noteApplied in apply.go wakes the proposer's waiter
//     (awaitProposal in propose.go), and batch.Commit returns to the
//     docstore; on a member that did not propose the entry, the Hooks
//     (internal/app/replica.go) bring the docstore's counters and catalog
//     up to date.
//  7. A write concern of more than one member then waits in
//     Replica.WaitForMembers (state.go) for the followers' match index.
//
// # Reads
//
// A member applies committed entries only, so every read of its storage
// is a majority read. A linearizable read on the primary also asks raft
// for a read index, confirmed by a majority (Replica.ReadLinearizable and
// node.readIndex in readindex.go), and waits until this member has
// applied up to it (releaseReads, called by the applier);
// afterClusterTime waits for the applied timestamp
// (Replica.WaitForTimestamp).
//
// # The rest
//
// replica.go is the member itself: identity, config, initiation, start,
// and the Hooks to the layers above. node.go holds the raft node, its
// loops and its role (promotion once the new term's entries are applied,
// demotion). membership.go turns config changes into raft membership
// changes and hands leadership on from a member that may not lead.
// transport.go carries raft's messages between members as replSetRaft
// and replSetSnapshot commands; snapshot.go catches up a member the log no
// longer covers. state.go answers hello, replSetGetStatus, stepDown,
// freeze and reconfig; config.go parses the config document.
package repl
