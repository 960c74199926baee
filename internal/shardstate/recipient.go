package shardstate

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardkey"
	"github.com/mayflydb/mayfly/internal/shardremote"
)

// RecvRequest is _recvChunkStart: pull Range of Namespace from the donor
// member at From.
type RecvRequest struct {
	MigrationID    string
	Namespace      string
	CollectionUUID bson.Binary
	FromShard      string
	From           string
	Range          migrate.Range
	KeyPattern     bson.D
}

// receiver is the recipient's side of one migration.
type receiver struct {
	req     RecvRequest
	pattern *shardkey.Pattern
	coll    *docstore.Collection
	cancel  context.CancelFunc
	done    chan struct{}

	// cloneSeq, modsSeq and sessionSeq number the requests to the donor,
	// which answers a number again with the same batch.
	cloneSeq, modsSeq, sessionSeq int64

	mu       sync.Mutex
	state    string // clone, catchup, steady, done, fail
	err      error
	cloned   int64
	caughtUp int64
	// sessionStmts counts the retryable-write records installed.
	sessionStmts int64
	// precopied: a whole pass of the donor's statement records was
	// installed before the critical section (sessionmods.go).
	precopied bool
	// committing is set from _recvChunkCommit on: the range's owner may
	// change under this member until it refreshes (expiryowner.go).
	committing atomic.Bool
}

// catchUpPoll is how often a steady recipient asks for new writes.
const catchUpPoll = 50 * time.Millisecond

// RecvStart answers _recvChunkStart: it records the recipient's pending
// range deletion (its partial copy, should the migration abort), deletes
// what an earlier migration of the range left here, and starts cloning.
func (m *Migrations) RecvStart(req RecvRequest) error {
	if err := m.checkPrimary(); err != nil {
		return err
	}
	pattern, err := shardkey.Parse(req.KeyPattern)
	if err != nil {
		return err
	}
	if _, started := m.receiver(req.MigrationID); started {
		return nil // the donor resent a start whose answer it lost
	}
	if err := m.claim(req.MigrationID, req.Namespace); err != nil {
		return err
	}
	db, name, _ := strings.Cut(req.Namespace, ".")
	coll, _, err := m.opts.Store.GetOrCreate(db, name)
	if err != nil {
		m.release(req.MigrationID)
		return fmt.Errorf("shardstate: open %s: %w", req.Namespace, err)
	}
	task := migrate.RangeDeletion{ID: migrate.RecipientTaskID(req.MigrationID), Namespace: req.Namespace,
		CollectionUUID: req.CollectionUUID, Range: req.Range, KeyPattern: req.KeyPattern, Pending: true}
	if err := m.putRecord(migrate.RangeDeletionsColl, task.ID, task); err != nil {
		m.release(req.MigrationID)
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc := &receiver{req: req, pattern: pattern, coll: coll, cancel: cancel, done: make(chan struct{}), state: "clone"}
	m.mu.Lock()
	m.receivers[req.MigrationID] = rc
	m.mu.Unlock()
	go m.receive(ctx, rc)
	return nil
}

// receive clones the range, then keeps applying the donor's writes until
// the commit or an abort stops it.
func (m *Migrations) receive(ctx context.Context, rc *receiver) {
	defer close(rc.done)
	err := m.waitOverlappingDeletions(ctx, rc.req)
	if err == nil {
		err = m.copyIndexes(ctx, rc)
	}
	if err == nil {
		err = m.deleteUnowned(ctx, rc.req.Namespace, rc.req.Range, rc.pattern)
	}
	if err == nil {
		m.failPoint(ctx, failpoint.MigrationHangInClone)
		err = m.clone(ctx, rc)
	}
	if err == nil {
		err = m.catchUp(ctx, rc)
	}
	if err != nil && ctx.Err() == nil {
		rc.set("fail", err)
		m.opts.Logger.Warn("migration clone failed", "migration", rc.req.MigrationID, "err", err)
	}
}

func (rc *receiver) set(state string, err error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.state, rc.err = state, err
}

func (m *Migrations) clone(ctx context.Context, rc *receiver) error {
	for ctx.Err() == nil {
		seq := rc.cloneSeq + 1 // moves on once its answer is stored, as applyMods's
		reply, err := shardremote.RunOn(ctx, m.opts.Client, rc.req.From, "admin", bson.D{{Key: "_migrateClone", Value: rc.req.MigrationID},
			{Key: "seq", Value: seq}})
		if err != nil {
			return err
		}
		docs := docsField(reply, "objects")
		if len(docs) == 0 {
			rc.set("catchup", nil)
			return nil
		}
		if err := m.store(rc, docs, nil); err != nil {
			return err
		}
		rc.mu.Lock()
		rc.cloned += int64(len(docs))
		rc.mu.Unlock()
		rc.cloneSeq = seq
	}
	return ctx.Err()
}

// steadyMods is the largest answer after which the recipient says it is
// steady: the donor may then take the critical section, in which the
// recipient applies the rest until there is none (RecvCommit). Waiting
// for an empty answer instead never ends while the range is written
// faster than a throttled recipient applies, as a session store's
// touches are (mongod bounds the same wait by
// maxCatchUpPercentageBeforeBlockingWrites).
const steadyMods = 64

// catchUp applies the donor's writes until an answer is small, then says
// it is steady and keeps polling until stopped.
func (m *Migrations) catchUp(ctx context.Context, rc *receiver) error {
	for ctx.Err() == nil {
		n, err := m.applyMods(ctx, rc)
		if err != nil {
			return err
		}
		if n <= steadyMods && !rc.precopied {
			if err := m.pullSessions(ctx, rc); err != nil {
				return err
			}
			rc.precopied = true
		}
		if n <= steadyMods {
			rc.mu.Lock()
			if rc.state == "catchup" {
				rc.state = "steady"
			}
			rc.mu.Unlock()
		}
		if n == 0 {
			clock.Sleep(ctx, m.opts.Clock, catchUpPoll)
		}
	}
	return nil
}

// applyMods applies one _transferMods answer and returns its size. The
// request's number moves on only once its answer is applied: a request
// whose reply never came (the steady poll that _recvChunkCommit
// interrupts) is sent again with the same number, and the donor, which
// took those writes off its list when it answered, answers it again.
func (m *Migrations) applyMods(ctx context.Context, rc *receiver) (int, error) {
	seq := rc.modsSeq + 1
	reply, err := shardremote.RunOn(ctx, m.opts.Client, rc.req.From, "admin", bson.D{{Key: "_transferMods", Value: rc.req.MigrationID},
		{Key: "seq", Value: seq}})
	if err != nil {
		return 0, err
	}
	reload := docsField(reply, "reload")
	deleted, _ := bsonFieldAny(reply, "deleted")
	ids, _ := deleted.(bson.A)
	if err := m.store(rc, reload, ids); err != nil {
		return 0, err
	}
	rc.mu.Lock()
	rc.caughtUp += int64(len(reload) + len(ids))
	rc.mu.Unlock()
	rc.modsSeq = seq
	return len(reload) + len(ids), nil
}

// store applies one answer of the donor as one write (a migration's: no
// change event): docs stored as the donor has them now, then the copies
// of deleted removed, those the donor no longer has in the range
// (deleted, expired, moved out). A document that has expired since the
// donor read it is not stored: it would be stored here, expired, until
// this shard's monitor found it; its copy is removed instead. A copy is
// removed only if it is in the range, whether or not it has expired here.
func (m *Migrations) store(rc *receiver, docs []bson.D, deleted []any) error {
	err := rc.coll.ApplyFromMigrate(docs, deleted, func(cur bson.D) bool { return inRange(rc.pattern, rc.req.Range, cur) })
	if err != nil {
		return fmt.Errorf("shardstate: store %d documents and %d deletions of migration %s: %w",
			len(docs), len(deleted), rc.req.MigrationID, err)
	}
	return nil
}

func mustID(doc bson.D) any {
	id, _ := bsonFieldAny(doc, "_id")
	return id
}

func docsField(reply bson.D, name string) []bson.D {
	v, _ := bsonFieldAny(reply, name)
	arr, _ := v.(bson.A)
	docs := make([]bson.D, 0, len(arr))
	for _, x := range arr {
		if d, ok := x.(bson.D); ok {
			docs = append(docs, d)
		}
	}
	return docs
}

func (m *Migrations) receiver(id string) (*receiver, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rc, ok := m.receivers[id]
	return rc, ok
}

// RecvStatus answers _recvChunkStatus.
func (m *Migrations) RecvStatus(id string) bson.D {
	rc, ok := m.receiver(id)
	if !ok {
		return bson.D{{Key: "active", Value: false}, {Key: "state", Value: "fail"},
			{Key: "errmsg", Value: fmt.Sprintf("migration %s is not active on this shard", id)}}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	reply := bson.D{{Key: "active", Value: true}, {Key: "migrationId", Value: id}, {Key: "ns", Value: rc.req.Namespace},
		{Key: "from", Value: rc.req.From}, {Key: "fromShardId", Value: rc.req.FromShard},
		{Key: "min", Value: rc.req.Range.Min}, {Key: "max", Value: rc.req.Range.Max},
		{Key: "state", Value: rc.state},
		{Key: "counts", Value: bson.D{{Key: "cloned", Value: rc.cloned}, {Key: "catchup", Value: rc.caughtUp},
			{Key: "sessionStmts", Value: rc.sessionStmts}}}}
	if rc.err != nil {
		reply = append(reply, bson.E{Key: "errmsg", Value: rc.err.Error()})
	}
	return reply
}

// RecvCommit answers _recvChunkCommit, sent once the donor holds the
// critical section: the recipient stops polling and applies the donor's
// last writes, until there are none.
func (m *Migrations) RecvCommit(ctx context.Context, id string) error {
	rc, ok := m.receiver(id)
	if !ok {
		return mongoerr.Newf(mongoerr.OperationFailed, "migration %s is not active on this shard", id)
	}
	rc.committing.Store(true)
	rc.cancel()
	<-rc.done
	rc.mu.Lock()
	failed := rc.err
	rc.mu.Unlock()
	if failed != nil {
		return failed
	}
	for {
		n, err := m.applyMods(ctx, rc)
		if err != nil {
			rc.set("fail", err)
			return err
		}
		if n == 0 {
			break
		}
	}
	// The pass that starts here, with the namespace's writes stopped,
	// brings what was written since the one before; a pass the commit
	// interrupted is finished first.
	passes := 1
	if !rc.precopied {
		passes = 2
	}
	for range passes {
		if err := m.pullSessions(ctx, rc); err != nil {
			rc.set("fail", err)
			return err
		}
	}
	rc.set("done", nil)
	return nil
}

// RecvRelease answers _recvChunkReleaseCritSec: the migration committed,
// so the copy is this shard's and its deletion task goes.
func (m *Migrations) RecvRelease(ctx context.Context, id, ns string) error {
	// The refresh comes before the receiver goes: until it is done, the
	// receiver holds the expiry of ns's documents (expiryowner.go).
	if _, err := m.opts.State.Refresh(ctx, ns); err != nil {
		return err
	}
	m.stopReceiver(id)
	if err := m.deleteRecord(migrate.RangeDeletionsColl, migrate.RecipientTaskID(id)); err != nil {
		return err
	}
	m.release(id)
	return nil
}

// RecvAbort answers _recvChunkAbort: the partial copy is left to the
// range deleter, at once.
func (m *Migrations) RecvAbort(id string) error {
	m.stopReceiver(id)
	if err := m.readyTask(migrate.RecipientTaskID(id), 0); err != nil {
		return err
	}
	m.release(id)
	return nil
}

func (m *Migrations) stopReceiver(id string) {
	rc, ok := m.receiver(id)
	if !ok {
		return
	}
	rc.cancel()
	<-rc.done
	m.mu.Lock()
	delete(m.receivers, id)
	m.mu.Unlock()
}
