package shardstate

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// MigrationOptions build a shard member's Migrations.
type MigrationOptions struct {
	State *State
	Store *docstore.Store
	// Feed is the member's change log: a donor reads the writes made to
	// a moving range since its clone began from it.
	Feed   *changestream.Feed
	Client Runner
	Clock  clock.Clock
	Logger *slog.Logger
	// Self is the address other shards reach this member at.
	Self func() string
	// IsPrimary reports whether this member takes writes now; migrations,
	// their recovery and range deletion run only then.
	IsPrimary func() bool
	// FailPoints holds the migration's fail points (failpoint.Migration*);
	// nil without enableTestCommands.
	FailPoints *failpoint.Registry
	// CleanupDelay is orphanCleanupDelaySecs: how long a donor keeps a
	// range it gave away before deleting it.
	CleanupDelay func() time.Duration
	// Barrier waits until every write proposed so far is applied (a
	// replica set member's no-op through its log); nil where writes
	// apply before their command returns.
	Barrier func(ctx context.Context) error
}

// Migrations is a shard member's side of chunk migration: the donor's
// coordinator, the recipient's cloner, the critical section that stops
// routed commands on a namespace while its placement changes, the range
// deleter, and the recovery of migrations a previous primary left. A
// shard takes part in one migration at a time, as donor or recipient.
type Migrations struct {
	opts MigrationOptions

	mu sync.Mutex
	// busy is the migration this shard takes part in ("" when none);
	// donating, the request it runs when it is busy as a donor.
	busy     string
	donating *donation
	// critical holds the namespaces in a critical section; inflight
	// counts the routed commands running on each namespace.
	critical map[string]bool
	inflight map[string]int
	// moving holds the namespaces a document move holds
	// (internal/docmove), with the move's id; held, the holds taken
	// now: id → namespace.
	moving map[string]string
	held   map[string]string
	// droppingColls and droppingDBs are the namespaces and databases a
	// drop holds (drop.go): no migration of them may begin.
	droppingColls map[string]bool
	droppingDBs   map[string]bool
	// changed is closed, and replaced, when a critical section ends or a
	// routed command in flight ends: it wakes who waits for either.
	changed chan struct{}
	// loaded: the critical sections of recorded migrations were set up.
	loaded bool
	// sources are the donor's clone sources, receivers the recipient's
	// jobs, by migration id.
	sources   map[string]*cloneSource
	receivers map[string]*receiver
}

// NewMigrations returns a shard member's migration service.
func NewMigrations(opts MigrationOptions) *Migrations {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m := &Migrations{opts: opts, critical: map[string]bool{}, inflight: map[string]int{}, moving: map[string]string{}, held: map[string]string{}, droppingColls: map[string]bool{}, droppingDBs: map[string]bool{}, changed: make(chan struct{}),
		sources: map[string]*cloneSource{}, receivers: map[string]*receiver{}}
	return m
}

// criticalSectionWait bounds how long a routed command waits for a
// critical section to end before it is refused with StaleConfig, which
// makes the router refresh and retry.
const criticalSectionWait = 10 * time.Second

// Enter admits a routed command on ns: it waits while a migration holds
// ns's critical section, a document move holds ns or a dropDatabase its
// database, then counts the command in flight until the
// returned release is called, so that a critical section begins only
// when no routed command is still writing the range.
func (m *Migrations) Enter(ctx context.Context, ns string) (release func(), err error) {
	m.loadRecorded()
	deadline := m.opts.Clock.Now().Add(criticalSectionWait)
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.heldLocked(ns) {
		if ctx.Err() != nil || !m.opts.Clock.Now().Before(deadline) {
			return nil, mongoerr.Newf(mongoerr.StaleConfig, "migration commit, document move or drop in progress for %s", ns)
		}
		m.waitBriefly()
	}
	m.inflight[ns]++
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.inflight[ns]--; m.inflight[ns] <= 1 && (m.heldLocked(ns) || len(m.droppingDBs) > 0) {
			m.wakeLocked()
		}
	}, nil
}

// heldLocked reports whether routed commands on ns must wait: a
// migration's critical section, a document move or a database drop holds
// it; m.mu is held.
func (m *Migrations) heldLocked(ns string) bool {
	db, _, _ := strings.Cut(ns, ".")
	return m.critical[ns] || m.moving[ns] != "" || m.droppingDBs[db]
}

// waitBriefly lets go of m.mu until the critical sections or the
// commands in flight change, or a moment passed (for the waiter's
// deadline), so that the command or migration it waits for can move on;
// m.mu is held. Polling alone kept each critical section's start and
// each waiting command's end a poll period late.
func (m *Migrations) waitBriefly() {
	changed := m.changed
	m.mu.Unlock()
	t := m.opts.Clock.NewTimer(20 * time.Millisecond)
	select {
	case <-changed:
	case <-t.C():
	}
	t.Stop()
	m.mu.Lock()
}

// wakeLocked wakes every waitBriefly; m.mu is held.
func (m *Migrations) wakeLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// enterCriticalSection stops new routed commands on ns, waits for those
// in flight to end and for the expiry changes decided as the owner
// before, then for every write they proposed to apply: a command that
// stopped waiting for its write (its client went away) ends while the
// write may still be on its way through the log, and it must reach the
// last pull, with its retry record, or never land.
func (m *Migrations) enterCriticalSection(ctx context.Context, ns string) error {
	if err := m.drainRouted(ctx, ns); err != nil {
		return err
	}
	if err := m.settleExpiries(ctx, ns); err != nil {
		m.leaveCriticalSection(ns)
		return fmt.Errorf("shardstate: entering the critical section of %s: %w", ns, err)
	}
	if m.opts.Barrier == nil {
		return nil
	}
	if err := m.opts.Barrier(ctx); err != nil {
		m.leaveCriticalSection(ns)
		return fmt.Errorf("shardstate: entering the critical section of %s: the log barrier: %w", ns, err)
	}
	return nil
}

// settleExpiries waits for the expiry machinery's changes to ns that
// it decided as the owner before the critical section held its answers
// (expiryowner.go): each must reach the recipient's last pull, or the
// recipient's copy would expire in the stream a second time.
func (m *Migrations) settleExpiries(ctx context.Context, ns string) error {
	if m.opts.Store == nil {
		return nil
	}
	db, coll, _ := strings.Cut(ns, ".")
	return m.opts.Store.SettleExpiries(ctx, db, coll)
}

// drainRouted stops new routed commands on ns and waits for those in
// flight to end.
func (m *Migrations) drainRouted(ctx context.Context, ns string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.critical[ns] = true
	for m.inflight[ns] > 0 {
		if err := ctx.Err(); err != nil {
			delete(m.critical, ns)
			m.wakeLocked()
			return fmt.Errorf("shardstate: entering the critical section of %s: %w", ns, err)
		}
		m.waitBriefly()
	}
	return nil
}

func (m *Migrations) leaveCriticalSection(ns string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.critical[ns] {
		delete(m.critical, ns)
		m.wakeLocked()
	}
}

// claim makes this shard take part in migration id of ns, refusing a
// second one as mongod's ActiveMigrationsRegistry does, and one of a
// namespace or database being dropped here (drop.go).
func (m *Migrations) claim(id, ns string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if db, _, _ := strings.Cut(ns, "."); m.droppingColls[ns] || m.droppingDBs[db] {
		return mongoerr.Newf(mongoerr.ConflictingOperationInProgress, "%s is being dropped", ns)
	}
	if m.busy != "" && m.busy != id {
		return mongoerr.Newf(mongoerr.ConflictingOperationInProgress,
			"Unable to start new balancer operation because this shard is currently donating or receiving chunk (migration %s)", m.busy)
	}
	m.busy = id
	return nil
}

// claimDonation is claim for a donor's migration id, run for d.
func (m *Migrations) claimDonation(id string, d *donation) error {
	if err := m.claim(id, d.req.Namespace); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.donating = d
	return nil
}

func (m *Migrations) release(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.busy == id {
		m.busy = ""
		m.donating = nil
	}
}

// PrimacyChanged is told that this member stepped up or down. Its
// placements are read again, and the critical sections its records
// show set up again, before it next takes a routed command or expires a
// document as an owner: until then the expiry of sharded namespaces is
// held (expiryowner.go). A critical section its donor entered while it
// was primary before goes too: the migration was finished or aborted by
// the primary that recovered it, and a record that still shows it sets
// it up again.
func (m *Migrations) PrimacyChanged() {
	m.mu.Lock()
	m.loaded = false
	if len(m.critical) > 0 {
		clear(m.critical)
		m.wakeLocked()
	}
	m.mu.Unlock()
	m.opts.State.ForgetPlacements()
}

// loadRecorded sets up the critical sections of the migrations this
// member's records show between entering one and learning the outcome,
// and the holds of its recorded document moves, before it admits its
// first routed command: a new primary must not let a write into a range
// that may already belong to the recipient, or change a document that
// is being moved.
func (m *Migrations) loadRecorded() {
	m.mu.Lock()
	loaded := m.loaded
	m.mu.Unlock()
	if loaded || m.checkPrimary() != nil {
		return // a secondary loads them when it steps up
	}
	coords, err := m.coordinators()
	if err != nil {
		m.opts.Logger.Warn("could not read migration records", "err", err)
		return
	}
	moves, err := readAll[migrate.DocumentMove](m, migrate.DocumentMovesColl)
	if err != nil {
		m.opts.Logger.Warn("could not read document move records", "err", err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range coords {
		if c.Phase == migrate.PhaseCriticalSection || c.Phase == migrate.PhaseCommitStarted {
			m.critical[c.Namespace] = true
		}
	}
	m.moving = map[string]string{}
	for _, rec := range moves {
		m.moving[rec.Namespace] = rec.ID
	}
	for id, ns := range m.held {
		if _, recorded := m.moving[ns]; !recorded {
			m.moving[ns] = id
		}
	}
	m.loaded = true
}

// FailPoint is failPoint, for the document moves.
func (m *Migrations) FailPoint(ctx context.Context, name string) { m.failPoint(ctx, name) }

// failPoint pauses while the named fail point is on (alwaysOn or times):
// a test turns it on to stop a migration at a phase, then kills a member
// or turns it off.
func (m *Migrations) failPoint(ctx context.Context, name string) {
	if m.opts.FailPoints == nil {
		return
	}
	p := m.opts.FailPoints.Point(name)
	if p == nil {
		return
	}
	for {
		if _, on := p.Evaluate(func(bson.D) bool { return true }); !on || ctx.Err() != nil {
			return
		}
		m.opts.Logger.Info("migration paused at fail point", "failPoint", name)
		if !clock.Sleep(ctx, m.opts.Clock, 100*time.Millisecond) {
			return
		}
	}
}

// errNotPrimary refuses migration work on a member that is not primary.
var errNotPrimary = mongoerr.New(mongoerr.NotWritablePrimary, "not primary")

// CheckPrimary refuses work on a member that is not primary.
func (m *Migrations) CheckPrimary() error { return m.checkPrimary() }

func (m *Migrations) checkPrimary() error {
	if m.opts.IsPrimary != nil && !m.opts.IsPrimary() {
		return errNotPrimary
	}
	return nil
}
