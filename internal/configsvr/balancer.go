package configsvr

import (
	"context"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/shardkey"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/shardremote"
)

// roundInterval is the pause between balancer rounds. mongod waits 10 s
// between idle rounds; one second lets a small collection spread onto
// a new shard within a minute.
const roundInterval = time.Second

// moveTimeout bounds one migration the balancer asks for.
const moveTimeout = 5 * time.Minute

// Run balances while this member is primary, until ctx ends.
func (s *Service) Run(ctx context.Context) {
	t := s.opts.Clock.NewTimer(roundInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if s.opts.IsPrimary == nil || s.opts.IsPrimary() {
			s.round(ctx)
		}
		t.Reset(roundInterval)
	}
}

// Status is balancerStatus' answer: the mode config.settings sets,
// whether a round runs now, and how many rounds ran.
func (s *Service) Status() bson.D {
	mode := "full"
	if b, err := s.settings(); err == nil && (b.Stopped || b.Mode == "off") {
		mode = "off"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return bson.D{{Key: "mode", Value: mode}, {Key: "inBalancerRound", Value: s.inRound},
		{Key: "numBalancerRounds", Value: s.rounds}}
}

// round runs one balancing round: it plans, then runs the splits and the
// moves (at most one per shard) side by side and waits for them.
func (s *Service) round(ctx context.Context) {
	enabled, err := s.enabled()
	if err != nil || !enabled {
		return
	}
	s.setRound(true)
	defer s.setRound(false)
	shards, colls, err := s.placement()
	if err != nil {
		s.opts.Logger.Warn("balancer could not read the placement", "err", err)
		return
	}
	var wg sync.WaitGroup
	for _, step := range migrate.Plan(colls, shards, nil) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.runStep(ctx, step)
		}()
	}
	wg.Wait()
}

func (s *Service) setRound(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inRound = on
	if !on {
		s.rounds++
	}
}

func (s *Service) runStep(ctx context.Context, step migrate.Step) {
	var err error
	if step.Split {
		err = s.CommitSplit(step.Namespace, []bson.D{step.SplitAt})
	} else {
		err = s.move(ctx, step)
	}
	if err != nil {
		s.opts.Logger.Warn("balancer step failed", "ns", step.Namespace, "range", step.Range.String(),
			"from", step.Donor, "to", step.Recipient, "split", step.Split, "err", err)
	}
}

// move asks the donor's primary to move the step's range.
func (s *Service) move(ctx context.Context, step migrate.Step) error {
	hosts, err := s.shardHosts(step.Donor)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, moveTimeout)
	defer cancel()
	_, err = shardremote.RunOnPrimary(ctx, s.opts.Client, hosts, "admin", bson.D{
		{Key: "_shardsvrMoveRange", Value: step.Namespace}, {Key: "toShard", Value: step.Recipient},
		{Key: "min", Value: step.Range.Min}, {Key: "max", Value: step.Range.Max}})
	return err
}

// enabled reads the balancer document: on unless stopped, and inside
// its active window when it has one.
func (s *Service) enabled() (bool, error) {
	b, err := s.settings()
	if err != nil {
		return false, err
	}
	if b.Stopped || b.Mode == "off" {
		return false, nil
	}
	return migrate.InWindow(b.ActiveWindow, s.opts.Clock.Now())
}

func (s *Service) settings() (shardmeta.Balancer, error) {
	var b shardmeta.Balancer
	docs, err := scanAll(nil, s.opts.Store.Collection("config", shardmeta.SettingsCollection), bson.D{{Key: "_id", Value: "balancer"}})
	if err != nil || len(docs) == 0 {
		return b, err
	}
	return b, decodeInto(docs[0], &b)
}

// placement reads the shards and every balanced collection's chunks.
func (s *Service) placement() ([]migrate.ShardInfo, []migrate.CollectionChunks, error) {
	shardDocs, err := scanAll(nil, s.opts.Store.Collection("config", shardmeta.ShardsCollection), nil)
	if err != nil {
		return nil, nil, err
	}
	shards := make([]migrate.ShardInfo, 0, len(shardDocs))
	for _, d := range shardDocs {
		var sh shardmeta.Shard
		if err := decodeInto(d, &sh); err != nil {
			return nil, nil, err
		}
		shards = append(shards, migrate.ShardInfo{ID: sh.ID, Draining: sh.Draining})
	}
	collDocs, err := scanAll(nil, s.opts.Store.Collection("config", shardmeta.CollectionsCollection), nil)
	if err != nil {
		return nil, nil, err
	}
	chunksColl := s.opts.Store.Collection("config", shardmeta.ChunksCollection)
	var colls []migrate.CollectionChunks
	for _, d := range collDocs {
		cc, ok, err := collectionChunks(d, chunksColl)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			colls = append(colls, cc)
		}
	}
	return shards, colls, nil
}

func collectionChunks(d bson.D, chunksColl *docstore.Collection) (migrate.CollectionChunks, bool, error) {
	var coll shardmeta.Collection
	if err := decodeInto(d, &coll); err != nil || coll.Unsplittable {
		return migrate.CollectionChunks{}, false, err
	}
	chunks, err := readChunks(nil, chunksColl, coll.UUID)
	if err != nil {
		return migrate.CollectionChunks{}, false, err
	}
	return migrate.CollectionChunks{Namespace: coll.ID, NoBalance: coll.NoBalance || migrationsOff(coll),
		HashedField: hashedField(coll.Key), Chunks: chunks}, true, nil
}

func migrationsOff(c shardmeta.Collection) bool {
	return c.AllowMigrations != nil && !*c.AllowMigrations || c.PermitMigrations != nil && !*c.PermitMigrations
}

// hashedField is the key's field when the key is one hashed field.
func hashedField(key bson.D) string {
	p, err := shardkey.Parse(key)
	if err != nil || !p.IsSingleHashed() {
		return ""
	}
	field, _ := p.HashedField()
	return field
}

// shardHosts reads a shard's members from config.shards.
func (s *Service) shardHosts(shard string) ([]string, error) {
	docs, err := scanAll(nil, s.opts.Store.Collection("config", shardmeta.ShardsCollection), bson.D{{Key: "_id", Value: shard}})
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	var sh shardmeta.Shard
	if err := decodeInto(docs[0], &sh); err != nil {
		return nil, err
	}
	return shardremote.SetHosts(sh.Host), nil
}
