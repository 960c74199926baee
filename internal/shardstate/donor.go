package shardstate

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardkey"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/shardremote"
)

// MoveRequest is _shardsvrMoveRange: move Range of Namespace from this
// shard to ToShard.
type MoveRequest struct {
	Namespace string
	ToShard   string
	Range     migrate.Range
}

// Bounds on the donor's waits: the recipient's clone and catch-up, and
// the commit's retries when the config servers do not answer.
const (
	cloneTimeout   = 5 * time.Minute
	commitAttempts = 10
)

// donorRun is one migration this member donates.
type donorRun struct {
	m     *Migrations
	rec   migrate.Coordinator
	table *shardmeta.RoutingTable
	// recipientHosts are the recipient set's members.
	recipientHosts []string
	critical       bool
	// steps are the durations of the six steps config.changelog's
	// moveChunk.from reports, as mongod's: the records, the range's ids,
	// the recipient's start, its clone and catch-up, the critical section
	// to the commit, and the end of the critical section.
	steps   [6]time.Duration
	stepped int
	last    time.Time
}

// stepDone ends the current step.
func (r *donorRun) stepDone() {
	now := r.m.opts.Clock.Now()
	if r.stepped < len(r.steps) {
		r.steps[r.stepped] = now.Sub(r.last)
		r.stepped++
	}
	r.last = now
}

// stepDetails are the steps done, in milliseconds, under mongod's names.
func (r *donorRun) stepDetails() bson.D {
	out := make(bson.D, 0, r.stepped)
	for i := range r.stepped {
		out = append(out, bson.E{Key: fmt.Sprintf("step %d of %d", i+1, len(r.steps)), Value: int32(r.steps[i].Milliseconds())})
	}
	return out
}

// MoveRange runs a migration as its donor, from start to its outcome:
// the recipient clones the range and catches up, this shard enters the
// critical section, the config servers commit the new owner, and the
// donor's copy is left to the range deleter. It returns when the
// migration committed or aborted; an error after the commit was sent
// whose outcome is unknown leaves the record for recovery to finish.
//
// As on mongod, the migration does not end with the request: a client
// that goes away (a router restarted, a timeout) leaves it running, and
// the same request sent again while it runs joins it and answers with
// its outcome, where any other is refused ConflictingOperationInProgress.
func (m *Migrations) MoveRange(ctx context.Context, req MoveRequest) error {
	if err := m.checkPrimary(); err != nil {
		return err
	}
	if d := m.runningDonation(req); d != nil {
		return d.wait(ctx)
	}
	d := &donation{req: req, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		d.err = m.donate(context.WithoutCancel(ctx), d)
	}()
	return d.wait(ctx)
}

// donation is a MoveRange in progress on this member.
type donation struct {
	req  MoveRequest
	done chan struct{}
	err  error // set before done closes
}

// wait returns the donation's outcome, or ctx's error if ctx ends
// first, the donation going on.
func (d *donation) wait(ctx context.Context) error {
	select {
	case <-d.done:
		return d.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r MoveRequest) same(o MoveRequest) bool {
	return r.Namespace == o.Namespace && r.ToShard == o.ToShard && r.Range.String() == o.Range.String()
}

// runningDonation is the donation in progress that req repeats, if any.
func (m *Migrations) runningDonation(req MoveRequest) *donation {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.donating != nil && m.donating.req.same(req) {
		return m.donating
	}
	return nil
}

// donate runs d's migration once it has claimed the shard.
func (m *Migrations) donate(ctx context.Context, d *donation) error {
	req := d.req
	run, err := m.prepareDonor(ctx, req)
	if err != nil {
		return err
	}
	if err := m.claimDonation(run.rec.ID, d); err != nil {
		return err
	}
	defer m.release(run.rec.ID)
	m.changelog(ctx, "moveChunk.start", req.Namespace, run.details())
	err = run.drive(ctx)
	note := bson.D{{Key: "note", Value: "success"}}
	if err != nil {
		note = bson.D{{Key: "note", Value: "aborted"}, {Key: "errmsg", Value: err.Error()}}
	}
	m.changelog(ctx, "moveChunk.from", req.Namespace, append(append(run.stepDetails(), run.details()...), note...))
	return err
}

// prepareDonor checks that this shard owns the range and finds the
// recipient.
func (m *Migrations) prepareDonor(ctx context.Context, req MoveRequest) (*donorRun, error) {
	id, err := m.opts.State.Identity()
	if err != nil {
		return nil, err
	}
	table, err := m.opts.State.Refresh(ctx, req.Namespace)
	if err != nil {
		return nil, err
	}
	if table == nil {
		return nil, mongoerr.Newf(mongoerr.NamespaceNotSharded, "%s is not sharded", req.Namespace)
	}
	if owner := migrate.OwnerOf(table.Chunks(), req.Range); owner != id.ShardName {
		return nil, mongoerr.Newf(mongoerr.ConflictingOperationInProgress,
			"Unable to move range %s of %s: this shard (%s) does not own it (owner %q)", req.Range, req.Namespace, id.ShardName, owner)
	}
	hosts, err := m.ShardHosts(ctx, req.ToShard)
	if err != nil {
		return nil, err
	}
	coll := table.Collection()
	rec := migrate.Coordinator{
		ID: bson.NewObjectID().Hex(), Namespace: req.Namespace, CollectionUUID: coll.UUID,
		Donor: id.ShardName, Recipient: req.ToShard, Range: req.Range, Phase: migrate.PhaseClone,
		PreMigration: table.ShardVersion(id.ShardName).Placement(),
	}
	return &donorRun{m: m, rec: rec, table: table, recipientHosts: hosts}, nil
}

// ShardHosts reads a shard's members from config.shards.
func (m *Migrations) ShardHosts(ctx context.Context, shard string) ([]string, error) {
	src, err := m.configSource()
	if err != nil {
		return nil, err
	}
	docs, err := src.FindAll(ctx, shardmeta.ShardsCollection, bson.D{{Key: "_id", Value: shard}})
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, mongoerr.Newf(mongoerr.ShardNotFound, "Could not find shard %s", shard)
	}
	var s shardmeta.Shard
	if err := shardmeta.Decode(docs[0], &s); err != nil {
		return nil, err
	}
	return shardremote.SetHosts(s.Host), nil
}

func (m *Migrations) configSource() (shardremote.ConfigSource, error) {
	id, err := m.opts.State.Identity()
	if err != nil {
		return shardremote.ConfigSource{}, err
	}
	return shardremote.ConfigSource{Client: m.opts.Client, Hosts: id.ConfigHosts()}, nil
}

func (r *donorRun) details() bson.D {
	return bson.D{{Key: "min", Value: r.rec.Range.Min}, {Key: "max", Value: r.rec.Range.Max},
		{Key: "from", Value: r.rec.Donor}, {Key: "to", Value: r.rec.Recipient}}
}

// drive runs the phases in order, aborting on a failure before the
// commit was sent.
func (r *donorRun) drive(ctx context.Context) error {
	m := r.m
	// The source is registered before the record exists: recovery takes
	// a recorded migration without a source for a dead one and aborts it.
	src := m.newCloneSource(r.rec, r.table.Pattern())
	defer m.dropCloneSource(r.rec.ID)
	r.last = m.opts.Clock.Now()
	if err := r.begin(); err != nil {
		return err
	}
	r.stepDone()
	if err := src.start(); err != nil {
		return r.abort(ctx, err)
	}
	r.stepDone()
	if err := r.cloneAndCatchUp(ctx); err != nil {
		return r.abort(ctx, err)
	}
	r.stepDone()
	if err := r.criticalSection(ctx); err != nil {
		return r.abort(ctx, err)
	}
	committed, err := r.commit(ctx)
	if err != nil {
		return err // outcome unknown: recovery finishes it, the critical section held
	}
	r.stepDone()
	if !committed {
		return r.abort(ctx, mongoerr.New(mongoerr.OperationFailed, "the config servers refused the migration's commit"))
	}
	err = m.finishCommit(ctx, r.rec)
	r.stepDone()
	return err
}

// begin records the migration and the donor's pending range deletion.
func (r *donorRun) begin() error {
	m := r.m
	if err := m.putRecord(migrate.CoordinatorsColl, r.rec.ID, r.rec); err != nil {
		return err
	}
	task := migrate.RangeDeletion{ID: migrate.DonorTaskID(r.rec.ID), Namespace: r.rec.Namespace,
		CollectionUUID: r.rec.CollectionUUID, Range: r.rec.Range, KeyPattern: r.table.Pattern().Spec(),
		Donor: true, Pending: true}
	return m.putRecord(migrate.RangeDeletionsColl, task.ID, task)
}

// advance records the next phase.
func (r *donorRun) advance(to migrate.Phase) error {
	if err := migrate.Advance(r.rec.Phase, to); err != nil {
		return err
	}
	next := r.rec
	next.Phase = to
	if err := r.m.putRecord(migrate.CoordinatorsColl, next.ID, next); err != nil {
		return err
	}
	r.rec = next
	return nil
}

// cloneAndCatchUp starts the recipient and waits until it has cloned
// the range and caught up with the writes made since.
func (r *donorRun) cloneAndCatchUp(ctx context.Context) error {
	m := r.m
	start := bson.D{{Key: "_recvChunkStart", Value: r.rec.Namespace},
		{Key: "migrationId", Value: r.rec.ID}, {Key: "collectionUuid", Value: r.rec.CollectionUUID},
		{Key: "fromShard", Value: r.rec.Donor}, {Key: "toShard", Value: r.rec.Recipient},
		{Key: "from", Value: m.opts.Self()}, {Key: "min", Value: r.rec.Range.Min}, {Key: "max", Value: r.rec.Range.Max},
		{Key: "shardKeyPattern", Value: r.table.Pattern().Spec()}}
	if _, err := shardremote.RunOnPrimary(ctx, m.opts.Client, r.recipientHosts, "admin", start); err != nil {
		return err
	}
	r.stepDone()
	deadline := m.opts.Clock.Now().Add(cloneTimeout)
	for {
		state, err := r.recipientState(ctx)
		if err != nil {
			return err
		}
		if state == "catchup" && r.rec.Phase == migrate.PhaseClone {
			if err := r.advance(migrate.PhaseCatchUp); err != nil {
				return err
			}
		}
		if state == "steady" {
			if r.rec.Phase == migrate.PhaseClone {
				if err := r.advance(migrate.PhaseCatchUp); err != nil {
					return err
				}
			}
			m.failPoint(ctx, failpoint.MigrationHangInCatchUp)
			return nil
		}
		if !m.opts.Clock.Now().Before(deadline) {
			return mongoerr.New(mongoerr.ExceededTimeLimit, "the recipient did not catch up in time")
		}
		if !clock.Sleep(ctx, m.opts.Clock, 50*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// recipientState asks the recipient how far it got.
func (r *donorRun) recipientState(ctx context.Context) (string, error) {
	reply, err := shardremote.RunOnPrimary(ctx, r.m.opts.Client, r.recipientHosts, "admin",
		bson.D{{Key: "_recvChunkStatus", Value: r.rec.ID}})
	if err != nil {
		return "", err
	}
	state := stringField(reply, "state")
	if state == "fail" {
		return "", mongoerr.Newf(mongoerr.OperationFailed, "the recipient failed: %s", stringField(reply, "errmsg"))
	}
	return state, nil
}

// criticalSection stops routed commands on the namespace, records it,
// and has the recipient apply the last writes.
func (r *donorRun) criticalSection(ctx context.Context) error {
	m := r.m
	wait, cancel := context.WithTimeout(ctx, criticalSectionWait)
	defer cancel()
	if err := m.enterCriticalSection(wait, r.rec.Namespace); err != nil {
		return err
	}
	r.critical = true
	if err := r.advance(migrate.PhaseCriticalSection); err != nil {
		return err
	}
	m.failPoint(ctx, failpoint.MigrationHangInCriticalSection)
	_, err := shardremote.RunOnPrimary(ctx, m.opts.Client, r.recipientHosts, "admin", bson.D{{Key: "_recvChunkCommit", Value: r.rec.ID}})
	return err
}

// commit records that the commit is sent, then asks the config servers
// to make the recipient the owner. committed is false when they refused;
// an error means the outcome is not known.
func (r *donorRun) commit(ctx context.Context) (committed bool, err error) {
	m := r.m
	if err := r.advance(migrate.PhaseCommitStarted); err != nil {
		return false, err
	}
	m.failPoint(ctx, failpoint.MigrationHangBeforeCommit)
	cmd := bson.D{{Key: "_configsvrCommitChunkMigration", Value: r.rec.Namespace},
		{Key: "fromShard", Value: r.rec.Donor}, {Key: "toShard", Value: r.rec.Recipient},
		{Key: "migratedChunk", Value: bson.D{{Key: "min", Value: r.rec.Range.Min}, {Key: "max", Value: r.rec.Range.Max}}},
		{Key: "collectionUUID", Value: r.rec.CollectionUUID},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}}}
	src, err := m.configSource()
	if err != nil {
		return false, err
	}
	for attempt := 0; attempt < commitAttempts; attempt++ {
		_, err = shardremote.RunOnPrimary(ctx, m.opts.Client, src.Hosts, "admin", cmd)
		if err == nil {
			m.failPoint(ctx, failpoint.MigrationHangAfterCommit)
			return true, nil
		}
		if !shardremote.IsUnanswered(err) && !retriableConfigError(err) {
			return r.answeredRefusal(ctx, err)
		}
		if !clock.Sleep(ctx, m.opts.Clock, time.Duration(attempt+1)*200*time.Millisecond) {
			break
		}
	}
	return false, fmt.Errorf("shardstate: commit of migration %s: %w", r.rec.ID, err)
}

// answeredRefusal decides a commit the config primary answered with an
// error: by who owns the range on the config servers now, since an
// answer does not prove the commit was not applied (a first attempt
// whose reply was lost, then a refusal of the retry). Not knowing, the
// outcome stays unknown and recovery decides it.
func (r *donorRun) answeredRefusal(ctx context.Context, refusal error) (committed bool, err error) {
	switch r.m.outcome(ctx, r.rec) {
	case migrate.OutcomeRecipientOwns:
		return true, nil
	case migrate.OutcomeDonorOwns:
		return false, nil
	}
	return false, fmt.Errorf("shardstate: commit of migration %s refused (%w), and the owner is not known", r.rec.ID, refusal)
}

// retriableConfigError is an answer that says nothing of the commit: the
// config set was electing or out of reach.
func retriableConfigError(err error) bool {
	switch mongoerr.As(err).Code {
	case mongoerr.HostUnreachable, mongoerr.NotWritablePrimary, mongoerr.PrimarySteppedDown,
		mongoerr.InterruptedDueToReplStateChange, mongoerr.NotPrimaryNoSecondaryOk:
		return true
	}
	return false
}

// abort ends a migration the config servers did not commit.
func (r *donorRun) abort(ctx context.Context, cause error) error {
	if err := r.m.finishAbort(ctx, r.rec); err != nil {
		r.m.opts.Logger.Warn("migration abort left for recovery", "migration", r.rec.ID, "err", err)
	}
	return cause
}

// finishCommit ends a committed migration: the donor learns the new
// owner before it lets routed commands in again, its copy becomes a
// range deletion after the delay, and the recipient keeps its copy.
func (m *Migrations) finishCommit(ctx context.Context, rec migrate.Coordinator) error {
	if _, err := m.opts.State.Refresh(ctx, rec.Namespace); err != nil {
		return err
	}
	// The critical section ends before the committed phase is recorded:
	// a member that takes over from a record still at commitStarted
	// holds the critical section until it has read the outcome, which is
	// what the record would have told it.
	m.leaveCriticalSection(rec.Namespace)
	if rec.Phase != migrate.PhaseCommitted {
		rec.Phase = migrate.PhaseCommitted
		if err := m.putRecord(migrate.CoordinatorsColl, rec.ID, rec); err != nil {
			return err
		}
	}
	if err := m.readyTask(migrate.DonorTaskID(rec.ID), m.cleanupDelay()); err != nil {
		return err
	}
	if err := m.tellRecipient(ctx, rec, "_recvChunkReleaseCritSec"); err != nil {
		return err
	}
	return m.deleteRecord(migrate.CoordinatorsColl, rec.ID)
}

// finishAbort ends a migration that did not commit: the donor keeps the
// range and drops its pending deletion, the recipient's partial copy is
// deleted there.
func (m *Migrations) finishAbort(ctx context.Context, rec migrate.Coordinator) error {
	if rec.Phase != migrate.PhaseAborted {
		rec.Phase = migrate.PhaseAborted
		if err := m.putRecord(migrate.CoordinatorsColl, rec.ID, rec); err != nil {
			return err
		}
	}
	m.leaveCriticalSection(rec.Namespace)
	if err := m.deleteRecord(migrate.RangeDeletionsColl, migrate.DonorTaskID(rec.ID)); err != nil {
		return err
	}
	if err := m.tellRecipient(ctx, rec, "_recvChunkAbort"); err != nil {
		return err
	}
	return m.deleteRecord(migrate.CoordinatorsColl, rec.ID)
}

func (m *Migrations) tellRecipient(ctx context.Context, rec migrate.Coordinator, command string) error {
	hosts, err := m.ShardHosts(ctx, rec.Recipient)
	if err != nil {
		return err
	}
	_, err = shardremote.RunOnPrimary(ctx, m.opts.Client, hosts, "admin", bson.D{{Key: command, Value: rec.ID},
		{Key: "nss", Value: rec.Namespace}})
	return err
}

func (m *Migrations) cleanupDelay() time.Duration {
	if m.opts.CleanupDelay == nil {
		return 0
	}
	return m.opts.CleanupDelay()
}

// readyTask lets the range deleter run a task after delay.
func (m *Migrations) readyTask(id string, delay time.Duration) error {
	tasks, err := m.rangeDeletions()
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if t.ID == id {
			t.Pending = false
			t.NotBefore = bson.NewDateTimeFromTime(m.opts.Clock.Now().Add(delay))
			return m.putRecord(migrate.RangeDeletionsColl, t.ID, t)
		}
	}
	return nil
}

// changelog records a migration event in config.changelog, as mongod's
// donor does; a failure is logged, since the migration itself is done.
func (m *Migrations) changelog(ctx context.Context, what, ns string, details bson.D) {
	src, err := m.configSource()
	if err == nil {
		now := m.opts.Clock.Now()
		id, _ := m.opts.State.Identity()
		entry := shardmeta.ChangelogEntry{
			ID:     fmt.Sprintf("%s-%s-%s", m.opts.Self(), now.UTC().Format("2006-01-02T15:04:05.000Z07:00"), bson.NewObjectID().Hex()),
			Server: m.opts.Self(), Shard: id.ShardName, Time: bson.NewDateTimeFromTime(now), What: what, NS: ns, Details: details,
		}
		_, err = shardremote.RunOnPrimary(ctx, m.opts.Client, src.Hosts, "config", bson.D{{Key: "insert", Value: shardmeta.ChangelogCollection},
			{Key: "documents", Value: bson.A{entry}}, {Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}}})
	}
	if err != nil {
		m.opts.Logger.Warn("could not record a config.changelog entry", "what", what, "ns", ns, "err", err)
	}
}

func stringField(d bson.D, name string) string {
	for _, e := range d {
		if e.Key == name {
			s, _ := e.Value.(string)
			return s
		}
	}
	return ""
}

// cloneSource is the donor's side of one migration's data transfer: the
// ids of the range's documents still to send, and how far in the change
// log the writes made since the clone began were read.
type cloneSource struct {
	m       *Migrations
	rec     migrate.Coordinator
	pattern *shardkey.Pattern
	coll    *docstore.Collection

	mu      sync.Mutex
	pos     changestream.Position
	toClone []any
	pending []any
	// The last _migrateClone and _transferMods answers, by the number the
	// recipient gave them: a request sent again after a lost reply gets
	// the same answer, so no document is skipped.
	cloneSeq, modsSeq int64
	lastClone         []bson.D
	lastMods          Mods
	sessions          sessionExport
}

// cloneBatch bounds the documents one _migrateClone or _transferMods
// reply carries.
const cloneBatch = 500

func (m *Migrations) newCloneSource(rec migrate.Coordinator, p *shardkey.Pattern) *cloneSource {
	src := &cloneSource{m: m, rec: rec, pattern: p}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sources[rec.ID] = src
	return src
}

func (m *Migrations) dropCloneSource(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sources, id)
}

func (m *Migrations) cloneSource(id string) (*cloneSource, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if src, ok := m.sources[id]; ok {
		return src, nil
	}
	return nil, mongoerr.Newf(mongoerr.OperationFailed, "migration %s is not active on this shard", id)
}

// start notes the change log's position, then the ids of the range's
// documents: a write after the position is sent again by catch-up, so
// one made while the ids are read is not missed.
func (s *cloneSource) start() error {
	db, name, _ := strings.Cut(s.rec.Namespace, ".")
	s.coll = s.m.opts.Store.Collection(db, name)
	pos, err := s.m.opts.Feed.Now()
	if err != nil {
		return fmt.Errorf("shardstate: change log position: %w", err)
	}
	s.pos = pos
	if s.coll == nil {
		return nil
	}
	err = eachInRange(context.Background(), s.coll, s.pattern, s.rec.Range, func(doc bson.D) error {
		if inRange(s.pattern, s.rec.Range, doc) {
			s.toClone = append(s.toClone, mustID(doc))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("shardstate: scan %s for migration: %w", s.rec.Namespace, err)
	}
	return nil
}

// MigrateClone answers _migrateClone number seq: the next documents of
// the range, as they are now; an empty batch ends the clone. An expired
// document is not live and is not sent. The same seq again gets the same
// batch.
func (m *Migrations) MigrateClone(id string, seq int64) ([]bson.D, error) {
	src, err := m.cloneSource(id)
	if err != nil {
		return nil, err
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if seq == src.cloneSeq {
		return src.lastClone, nil
	}
	docs, err := src.nextClone()
	if err != nil {
		return nil, err
	}
	src.cloneSeq, src.lastClone = seq, docs
	return docs, nil
}

// nextClone takes the next batch of the range's documents; s.mu is
// held.
func (s *cloneSource) nextClone() ([]bson.D, error) {
	var docs []bson.D
	for len(s.toClone) > 0 && len(docs) < cloneBatch {
		docID := s.toClone[0]
		s.toClone = s.toClone[1:]
		doc, err := s.current(docID)
		if err != nil {
			return nil, err
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
	return docs, nil
}

// current is the live document with docID if it is in the range.
func (s *cloneSource) current(docID any) (bson.D, error) {
	if s.coll == nil {
		return nil, nil
	}
	doc, err := s.coll.FindOne(bson.D{{Key: "_id", Value: docID}})
	if err != nil || doc == nil || !inRange(s.pattern, s.rec.Range, doc) {
		return nil, err
	}
	return doc, nil
}

// Mods is a _transferMods answer: documents to store as they are now,
// and ids to delete (deleted, expired, or moved out of the range).
type Mods struct {
	Reload  []bson.D
	Deleted []any
}

// TransferMods answers _transferMods number seq: the writes to the
// namespace made since the last call (or the clone's start), as the
// current state of each document they touched. The same seq again gets
// the same answer.
func (m *Migrations) TransferMods(id string, seq int64) (Mods, error) {
	src, err := m.cloneSource(id)
	if err != nil {
		return Mods{}, err
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if seq == src.modsSeq {
		return src.lastMods, nil
	}
	mods, err := src.nextMods()
	if err != nil {
		return Mods{}, err
	}
	src.modsSeq, src.lastMods = seq, mods
	return mods, nil
}

// nextMods reads the change log on and takes the next batch of touched
// documents; s.mu is held.
func (s *cloneSource) nextMods() (Mods, error) {
	if err := s.readLog(); err != nil {
		return Mods{}, err
	}
	var mods Mods
	for len(s.pending) > 0 && len(mods.Reload)+len(mods.Deleted) < cloneBatch {
		docID := s.pending[0]
		s.pending = s.pending[1:]
		doc, err := s.current(docID)
		if err != nil {
			return Mods{}, err
		}
		if doc != nil {
			mods.Reload = append(mods.Reload, doc)
		} else {
			mods.Deleted = append(mods.Deleted, docID)
		}
	}
	return mods, nil
}

// readLog adds the ids of the documents written since pos to pending.
func (s *cloneSource) readLog() error {
	feed := s.m.opts.Feed
	hwm, err := feed.Now()
	if err != nil {
		return err
	}
	db, coll, _ := strings.Cut(s.rec.Namespace, ".")
	seen := map[string]bool{}
	for _, id := range s.pending {
		seen[string(keyenc.AppendValue(nil, id))] = true
	}
	err = changestream.ScanTo(feed.Reader, s.pos, hwm, func(rec changestream.Record) (bool, error) {
		ev := rec.Event
		if ev.DB != db || ev.Coll != coll || !dataChange(ev.Op) {
			return true, nil
		}
		id, err := ev.DocumentID()
		if err != nil {
			return false, err
		}
		if k := string(keyenc.AppendValue(nil, id)); !seen[k] {
			seen[k] = true
			s.pending = append(s.pending, id)
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("shardstate: read the change log for migration %s: %w", s.rec.ID, err)
	}
	s.pos = hwm
	return nil
}

func dataChange(op changestream.Op) bool {
	switch op {
	case changestream.OpInsert, changestream.OpUpdate, changestream.OpReplace, changestream.OpDelete:
		return true
	}
	return false
}

func bsonFieldAny(d bson.D, name string) (any, bool) {
	for _, e := range d {
		if e.Key == name {
			return e.Value, true
		}
	}
	return nil, false
}
