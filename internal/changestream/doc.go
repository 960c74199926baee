// Package changestream is change streams below the MongoDB front end:
// the change log they read, and the reading of it into events.
//
// The log holds one record per logical change (insert, update, replace,
// delete, expiry, drop, rename, dropDatabase, and the DDL events of
// showExpandedEvents: create, createIndexes, dropIndexes, modify), in the
// same storage engine as the documents, under keys ordered by cluster
// timestamp and the change's index within its write. The docstore
// describes each change (Event) and hands it to the storage batch it
// commits (EventBatch); the batch decides the timestamp: the standalone
// Engine at commit, a replica set at apply, from the entry's timestamp,
// so that every member holds the same log.
//
// A stream (Stream, opened by Streams.Open from a parsed $changeStream
// stage, Spec) reads the changes after its position, keeps those in its
// scope, turns each into the event mongod would send and runs the stages
// after $changeStream on it; a getMore that finds none waits for the next
// commit. The command layer parses the stage and builds the replies.
//
// Where each step lives:
//
//	writing the log    event.go (Event and its encoding), key.go (positions,
//	                   resume tokens), log.go (records, Scan, Feed, trim),
//	                   expirylog.go (runs of TTL deletions), engine.go (the
//	                   standalone engine that stamps events), diff.go
//	                   (updateDescription), preimages.go (the collection option)
//	opening a stream   spec.go (Spec, Scope, resume checks), streams.go (what
//	                   a server's streams share, Host, Call)
//	reading a batch    stream.go (Read, the stages after $changeStream),
//	                   recentlog.go (the log's recent records, decoded once
//	                   for every stream near its end)
//	choosing changes   match.go (a leading $match tested on the change)
//	building events    eventdoc.go (the event as a document), encode.go
//	                   (plain events encoded straight from the change),
//	                   cache.go (one encoding shared by streams)
//	waiting            await.go (an empty batch waits for the next commit;
//	                   a short one behind a steady flow gathers more)
package changestream
