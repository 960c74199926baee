package configsvr

import (
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// MigrationCommit is _configsvrCommitChunkMigration.
type MigrationCommit struct {
	Namespace string
	Donor     string
	Recipient string
	Range     migrate.Range
}

// CommitMigration makes the recipient the owner of the range, in one
// transaction over config.chunks and config.changelog. A commit already
// made (a donor that lost the reply and asks again) succeeds again.
func (s *Service) CommitMigration(c MigrationCommit) error {
	return s.commitPlacement(c.Namespace, "moveChunk.commit", func(chunks []shardmeta.Chunk) ([]shardmeta.Chunk, error) {
		if holder, ok := migrate.ChunkHolding(chunks, c.Range); ok && holder.Shard == c.Recipient &&
			migrate.CompareBounds(holder.Min, c.Range.Min) == 0 && migrate.CompareBounds(holder.Max, c.Range.Max) == 0 {
			return chunks, nil
		}
		return migrate.CommitMove(chunks, migrate.Move{Range: c.Range, Donor: c.Donor, Recipient: c.Recipient, At: s.clusterTime()})
	}, bson.D{{Key: "min", Value: c.Range.Min}, {Key: "max", Value: c.Range.Max},
		{Key: "from", Value: c.Donor}, {Key: "to", Value: c.Recipient}})
}

// CommitSplit splits the chunks holding points there.
func (s *Service) CommitSplit(ns string, points []bson.D) error {
	what := "split"
	if len(points) > 1 {
		what = "multi-split"
	}
	list := make(bson.A, len(points))
	for i, p := range points {
		list[i] = p
	}
	return s.commitPlacement(ns, what, func(chunks []shardmeta.Chunk) ([]shardmeta.Chunk, error) {
		return migrate.Split(chunks, points, nil)
	}, bson.D{{Key: "splitPoints", Value: list}})
}

// clusterTime stamps a commit: onCurrentShardSince and history's
// validAfter.
func (s *Service) clusterTime() bson.Timestamp {
	return bson.Timestamp{T: uint32(s.opts.Clock.Now().Unix()), I: 1}
}

// commitPlacement reads ns's chunks, lets change compute the new ones,
// and writes the difference and a changelog entry in one transaction.
func (s *Service) commitPlacement(ns, what string, change func([]shardmeta.Chunk) ([]shardmeta.Chunk, error), details bson.D) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	store := s.opts.Store
	chunksColl, err := s.collection(shardmeta.ChunksCollection)
	if err != nil {
		return err
	}
	logColl, err := s.collection(shardmeta.ChangelogCollection)
	if err != nil {
		return err
	}
	x := store.BeginTxn()
	defer x.Abort()
	coll, err := readCollection(x, store, ns)
	if err != nil {
		return err
	}
	chunks, err := readChunks(x, chunksColl, coll.UUID)
	if err != nil {
		return err
	}
	updated, err := change(chunks)
	if err != nil {
		return placementError(ns, err)
	}
	if _, err := shardmeta.NewRoutingTable(coll, updated); err != nil {
		return fmt.Errorf("configsvr: %s of %s would break the chunks: %w", what, ns, err)
	}
	if err := writeChunks(x, chunksColl, chunks, updated); err != nil {
		return err
	}
	if err := x.Insert(logColl, s.changelogEntry(what, ns, details)); err != nil {
		return fmt.Errorf("configsvr: changelog: %w", err)
	}
	if err := x.Commit(docstore.WriteOptions{}); err != nil {
		return fmt.Errorf("configsvr: commit %s of %s: %w", what, ns, err)
	}
	return nil
}

func (s *Service) collection(name string) (*docstore.Collection, error) {
	c, _, err := s.opts.Store.GetOrCreate("config", name)
	if err != nil {
		return nil, fmt.Errorf("configsvr: open config.%s: %w", name, err)
	}
	return c, nil
}

// placementError answers a move or split the chunks refuse with mongod's
// codes.
func placementError(ns string, err error) error {
	switch {
	case errors.Is(err, migrate.ErrBadSplit):
		return mongoerr.Newf(mongoerr.InvalidOptions, "split point is not strictly inside a chunk of %s", ns)
	case errors.Is(err, migrate.ErrEmptyRange), errors.Is(err, migrate.ErrNoChunk):
		return mongoerr.Newf(mongoerr.InvalidOptions, "the range is not within one chunk of %s: %v", ns, err)
	case errors.Is(err, migrate.ErrNotOwner), errors.Is(err, migrate.ErrSameShard):
		return mongoerr.Newf(mongoerr.ConflictingOperationInProgress, "the range of %s is not on the donor: %v", ns, err)
	}
	return err
}

func readCollection(x *docstore.Txn, store *docstore.Store, ns string) (shardmeta.Collection, error) {
	var coll shardmeta.Collection
	c := store.Collection("config", shardmeta.CollectionsCollection)
	docs, err := scanAll(x, c, bson.D{{Key: "_id", Value: ns}})
	if err != nil {
		return coll, err
	}
	if len(docs) == 0 {
		return coll, mongoerr.Newf(mongoerr.NamespaceNotSharded, "%s is not sharded", ns)
	}
	return coll, decodeInto(docs[0], &coll)
}

func readChunks(x *docstore.Txn, c *docstore.Collection, uuid bson.Binary) ([]shardmeta.Chunk, error) {
	docs, err := scanAll(x, c, bson.D{{Key: "uuid", Value: uuid}})
	if err != nil {
		return nil, err
	}
	chunks := make([]shardmeta.Chunk, len(docs))
	for i, d := range docs {
		if err := decodeInto(d, &chunks[i]); err != nil {
			return nil, err
		}
	}
	return chunks, nil
}

func scanAll(x *docstore.Txn, c *docstore.Collection, filter bson.D) ([]bson.D, error) {
	if c == nil {
		return nil, nil
	}
	f, err := query.NewFilter(filter)
	if err != nil {
		return nil, err
	}
	it := c.Scan(nil, f)
	if x != nil {
		it = x.Scan(c, nil, f)
	}
	defer it.Close()
	var out []bson.D
	for {
		doc, ok, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("configsvr: read %s: %w", c.Namespace(), err)
		}
		if !ok {
			return out, nil
		}
		out = append(out, doc)
	}
}

// writeChunks stores the chunks that changed and deletes those that went.
func writeChunks(x *docstore.Txn, c *docstore.Collection, old, updated []shardmeta.Chunk) error {
	write, remove := migrate.Diff(old, updated)
	for _, ch := range write {
		doc, err := toD(ch)
		if err != nil {
			return err
		}
		var found bool
		_, err = x.Modify(c, ch.ID, func(cur bson.D) (docstore.Change, error) {
			found = cur != nil
			return docstore.Change{Kind: docstore.Replace, Doc: doc, Whole: true}, nil
		})
		if err == nil && !found {
			err = x.Insert(c, doc)
		}
		if err != nil {
			return fmt.Errorf("configsvr: write chunk %s: %w", ch.ID.Hex(), err)
		}
	}
	for _, id := range remove {
		if _, err := x.Modify(c, id, func(bson.D) (docstore.Change, error) {
			return docstore.Change{Kind: docstore.Remove}, nil
		}); err != nil {
			return fmt.Errorf("configsvr: delete chunk %s: %w", id.Hex(), err)
		}
	}
	return nil
}

func (s *Service) changelogEntry(what, ns string, details bson.D) bson.D {
	now := s.opts.Clock.Now()
	self := s.opts.Self()
	return bson.D{
		{Key: "_id", Value: fmt.Sprintf("%s-%s-%s", self, now.UTC().Format("2006-01-02T15:04:05.000Z07:00"), bson.NewObjectID().Hex())},
		{Key: "server", Value: self}, {Key: "shard", Value: "config"}, {Key: "clientAddr", Value: ""},
		{Key: "time", Value: bson.NewDateTimeFromTime(now)}, {Key: "what", Value: what}, {Key: "ns", Value: ns},
		{Key: "details", Value: details},
	}
}

// toD is a metadata document as a bson.D, for the docstore.
func toD(v any) (bson.D, error) {
	raw, err := shardmeta.Encode(v)
	if err != nil {
		return nil, err
	}
	return bsonutil.ToD(raw), nil
}

func decodeInto(d bson.D, out any) error {
	raw, err := bson.Marshal(d)
	if err != nil {
		return fmt.Errorf("configsvr: decode: %w", err)
	}
	if err := bson.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("configsvr: decode %T: %w", out, err)
	}
	return nil
}
