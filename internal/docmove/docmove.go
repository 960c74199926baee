// Package docmove carries out, on the shard holding a document, an
// update that changed its shard key to a value another shard owns
// (docs/design/0014, "Shard key changes"). The shard records the move,
// inserts the new document on the owner, then deletes its own copy with
// the client's retry record in the same batch, and drops the record.
// While a move is recorded its namespace is held on this shard (routed
// commands wait, as for a migration's critical section:
// shardstate.Migrations.HoldForMove), so the document cannot change
// under it; a new primary takes up the hold from the record and the
// recovery (Run) finishes the move before routed commands come in again.
// A crash therefore never leaves two copies, or none, and a retry of the
// update answers the first attempt's result.
package docmove

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/failpoint"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/shardremote"
	"github.com/mayflydb/mayfly/internal/shardstate"
)

// Options build a Mover.
type Options struct {
	Store      *docstore.Store
	State      *shardstate.State
	Migrations *shardstate.Migrations
	Client     shardremote.Runner
	Clock      clock.Clock
	Logger     *slog.Logger
}

// Mover is a shard member's document moves.
type Mover struct {
	opts Options

	mu sync.Mutex
	// running are the moves MoveDocument runs now: the recovery leaves
	// them alone.
	running map[string]bool
}

// New returns a shard member's Mover.
func New(opts Options) *Mover {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Mover{opts: opts, running: map[string]bool{}}
}

// Request is one update's move of a document to the shard owning its
// new shard key value.
type Request struct {
	Namespace string
	ToShard   string
	Pre, Post bson.D
	// Result is the statement's retry record (what a retry answers);
	// Session names the retryable write; nil records nothing.
	Result  bson.D
	Session *migrate.MoveSession
}

// MoveDocument moves req.Pre, which this shard holds, to req.ToShard as
// req.Post. WriteConflict says the document changed since the update
// read it: nothing was written.
func (v *Mover) MoveDocument(ctx context.Context, req Request) error {
	if err := v.opts.Migrations.CheckPrimary(); err != nil {
		return err
	}
	rec := migrate.DocumentMove{ID: bson.NewObjectID().Hex(), Namespace: req.Namespace, ToShard: req.ToShard,
		Pre: req.Pre, Post: req.Post, Result: req.Result, Session: req.Session}
	v.setRunning(rec.ID, true)
	defer v.setRunning(rec.ID, false)
	release, err := v.opts.Migrations.HoldForMove(ctx, rec.Namespace, rec.ID)
	if err != nil {
		return err
	}
	defer func() { release(v.recorded(rec.ID)) }()
	if done, err := v.statementDone(&rec); err != nil || done {
		return err // a move of this statement finished while this one waited
	}
	if err := v.checkMovable(rec); err != nil {
		return err
	}
	if err := v.opts.Migrations.PutRecord(migrate.DocumentMovesColl, rec.ID, rec); err != nil {
		return err
	}
	return v.finish(ctx, &rec)
}

// checkMovable checks, under the hold, that this shard still holds the
// document as the update read it and still owns it.
func (v *Mover) checkMovable(rec migrate.DocumentMove) error {
	c, err := v.collection(rec.Namespace)
	if err != nil {
		return err
	}
	id, _ := bsonutil.Field(rec.Pre, "_id")
	cur, err := c.FindOne(bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return err
	}
	if cur == nil || !sameDoc(cur, rec.Pre) {
		return mongoerr.New(mongoerr.WriteConflict, "the document changed while its update moved it to another shard; the update was not applied")
	}
	if owns, held := v.opts.Migrations.ExpiryOwner(rec.Namespace); held || owns == nil || !owns(rec.Pre) {
		return placementChanged(rec.Namespace)
	}
	return nil
}

func placementChanged(ns string) error {
	return mongoerr.Newf(mongoerr.StaleConfig, "the placement of %s changed while an update moved a document between shards", ns)
}

// finish carries a recorded move to its end: the new document on the
// owner, this shard's copy deleted with the retry record, the record
// dropped. An owner that refuses the document aborts the move (nothing
// changed here); one that does not answer leaves the record, and the
// hold, for the recovery to finish.
func (v *Mover) finish(ctx context.Context, rec *migrate.DocumentMove) error {
	m := v.opts.Migrations
	if !rec.Inserted {
		err := v.insertMoved(ctx, rec)
		if err != nil && !shardremote.IsUnanswered(err) {
			v.opts.Logger.Info("document move refused by its new owner", "ns", rec.Namespace, "toShard", rec.ToShard, "err", err)
			if derr := m.DeleteRecord(migrate.DocumentMovesColl, rec.ID); derr != nil {
				return errors.Join(err, derr)
			}
			return err
		}
		if err != nil {
			return err
		}
		rec.Inserted = true
		if err := m.PutRecord(migrate.DocumentMovesColl, rec.ID, rec); err != nil {
			return err
		}
	}
	m.FailPoint(ctx, failpoint.DocumentMoveHangAfterInsert)
	if err := v.deleteMovedFrom(rec); err != nil {
		return err
	}
	return m.DeleteRecord(migrate.DocumentMovesColl, rec.ID)
}

// insertMoved inserts the new document on its owner, with the owner's
// shard version from this shard's routing table: an owner that lost the
// range since answers StaleConfig. A duplicate _id is the document
// itself when it is the one this move inserts (an attempt whose reply
// was lost).
func (v *Mover) insertMoved(ctx context.Context, rec *migrate.DocumentMove) error {
	table, err := v.opts.State.Refresh(ctx, rec.Namespace)
	if err != nil {
		return err
	}
	if table == nil || !shardstate.NewFilter(table, rec.ToShard).Owns(rec.Post) {
		return placementChanged(rec.Namespace)
	}
	hosts, err := v.opts.Migrations.ShardHosts(ctx, rec.ToShard)
	if err != nil {
		return err
	}
	db, coll, _ := strings.Cut(rec.Namespace, ".")
	version := table.ShardVersion(rec.ToShard)
	reply, err := shardremote.RunOnPrimary(ctx, v.opts.Client, hosts, db, bson.D{{Key: "insert", Value: coll},
		{Key: "documents", Value: bson.A{rec.Post}}, {Key: "shardVersion", Value: version.Doc()},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}}})
	if err != nil {
		return err
	}
	wes := bsonutil.ToA(field(reply, "writeErrors"))
	if len(wes) == 0 {
		return nil
	}
	we := bsonutil.ToD(wes[0])
	code, _ := field(we, "code").(int32)
	werr := mongoerr.Newf(mongoerr.Code(code), "%v", field(we, "errmsg"))
	if werr.Code == mongoerr.DuplicateKey && v.ownerHolds(ctx, hosts, db, coll, version, rec.Post) {
		return nil
	}
	return werr
}

// ownerHolds reports whether the owner holds doc as it is.
func (v *Mover) ownerHolds(ctx context.Context, hosts []string, db, coll string, version shardmeta.ChunkVersion, doc bson.D) bool {
	id, _ := bsonutil.Field(doc, "_id")
	reply, err := shardremote.RunOnPrimary(ctx, v.opts.Client, hosts, db, bson.D{{Key: "find", Value: coll},
		{Key: "filter", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "limit", Value: int64(1)},
		{Key: "singleBatch", Value: true}, {Key: "shardVersion", Value: version.Doc()}})
	if err != nil {
		return false
	}
	batch := bsonutil.ToA(field(bsonutil.ToD(field(reply, "cursor")), "firstBatch"))
	return len(batch) == 1 && sameDoc(bsonutil.ToD(batch[0]), doc)
}

// deleteMovedFrom deletes this shard's copy with the statement's retry
// record in the same batch. A copy that is gone (it expired meanwhile)
// or differs (a write that did not come through a router) stays as it
// is; the move is done on the owner.
func (v *Mover) deleteMovedFrom(rec *migrate.DocumentMove) error {
	c, err := v.collection(rec.Namespace)
	if err != nil {
		return err
	}
	opt, err := v.recordedOptions(rec)
	if err != nil {
		return err
	}
	id, _ := bsonutil.Field(rec.Pre, "_id")
	_, err = c.Modify(id, opt, func(cur bson.D) (docstore.Change, error) {
		switch {
		case cur == nil:
			v.opts.Logger.Info("a moved document's old copy is gone already (it expired)", "ns", rec.Namespace, "_id", id)
			return docstore.Change{Kind: docstore.Keep}, nil
		case !sameDoc(cur, rec.Pre):
			v.opts.Logger.Warn("a moved document's old copy changed outside the move; left in place", "ns", rec.Namespace, "_id", id)
			return docstore.Change{Kind: docstore.Keep}, nil
		}
		return docstore.Change{Kind: docstore.Remove}, nil
	})
	if err != nil {
		return fmt.Errorf("docmove: delete the moved document from %s: %w", rec.Namespace, err)
	}
	return nil
}

// statementDone reports whether the move's statement is recorded as
// done: an earlier attempt's move finished (by its own run or by the
// recovery) while this attempt waited for the hold.
func (v *Mover) statementDone(rec *migrate.DocumentMove) (bool, error) {
	rt, err := v.statement(rec)
	if err != nil || rt == nil {
		return false, err
	}
	_, done, err := rt.Prior(0)
	return done, err
}

// statement is the retryable write the move is a statement of; nil
// without one.
func (v *Mover) statement(rec *migrate.DocumentMove) (*session.Txn, error) {
	if rec.Session == nil {
		return nil, nil
	}
	s := rec.Session
	return session.Begin(session.Write{Engine: v.opts.Store.Engine(), LSID: s.LSID, Label: s.Label, Txn: s.Txn,
		StmtIDs: []int32{s.StmtID}, Now: v.opts.Clock.Now, Migrated: true})
}

// recordedOptions are the write options that add the move's statement
// record to the deletion's batch.
func (v *Mover) recordedOptions(rec *migrate.DocumentMove) (docstore.WriteOptions, error) {
	rt, err := v.statement(rec)
	if err != nil || rt == nil {
		return docstore.WriteOptions{}, err
	}
	result := rec.Result
	return docstore.WriteOptions{Extra: rt.Record(0, func() bson.D { return result })}, nil
}

// RecoveryPeriod is how often a primary looks for moves to finish.
const RecoveryPeriod = 250 * time.Millisecond

// Recover finishes the moves a previous primary (or an attempt whose new
// owner did not answer) left, if this member is a shard's primary; the
// server runs it every RecoveryPeriod.
func (v *Mover) Recover(ctx context.Context) {
	if v.opts.Migrations.CheckPrimary() != nil {
		return
	}
	if _, err := v.opts.State.Identity(); err != nil {
		return // not a shard yet
	}
	if err := v.recoverAll(ctx); err != nil {
		v.opts.Logger.Warn("document move recovery failed; will retry", "err", err)
	}
}

func (v *Mover) recoverAll(ctx context.Context) error {
	moves, err := shardstate.Records[migrate.DocumentMove](v.opts.Migrations, migrate.DocumentMovesColl)
	if err != nil {
		return err
	}
	for i := range moves {
		if err := v.recoverMove(ctx, &moves[i]); err != nil {
			return fmt.Errorf("document move %s: %w", moves[i].ID, err)
		}
	}
	return nil
}

// recoverMove finishes rec unless MoveDocument runs it here, or it ended
// while the recovery waited for its hold.
func (v *Mover) recoverMove(ctx context.Context, rec *migrate.DocumentMove) error {
	if v.isRunning(rec.ID) {
		return nil
	}
	release, err := v.opts.Migrations.HoldForMove(ctx, rec.Namespace, rec.ID)
	if err != nil {
		return err
	}
	defer func() { release(v.recorded(rec.ID)) }()
	if !v.recorded(rec.ID) {
		return nil
	}
	v.opts.Logger.Info("recovering document move", "ns", rec.Namespace, "toShard", rec.ToShard, "inserted", rec.Inserted)
	return v.finish(ctx, rec)
}

func (v *Mover) setRunning(id string, running bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if running {
		v.running[id] = true
	} else {
		delete(v.running, id)
	}
}

func (v *Mover) isRunning(id string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.running[id]
}

// recorded reports whether move id's record is still there; a record
// that cannot be read counts as there.
func (v *Mover) recorded(id string) bool {
	moves, err := shardstate.Records[migrate.DocumentMove](v.opts.Migrations, migrate.DocumentMovesColl)
	if err != nil {
		return true
	}
	for _, rec := range moves {
		if rec.ID == id {
			return true
		}
	}
	return false
}

// collection opens ns on this member.
func (v *Mover) collection(ns string) (*docstore.Collection, error) {
	db, coll, _ := strings.Cut(ns, ".")
	c := v.opts.Store.Collection(db, coll)
	if c == nil {
		return nil, mongoerr.Newf(mongoerr.NamespaceNotFound, "collection %s does not exist", ns)
	}
	return c, nil
}

// sameDoc reports whether a and b are the same document, field for field.
func sameDoc(a, b bson.D) bool {
	ra, errA := bson.Marshal(a)
	rb, errB := bson.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ra, rb)
}

func field(d bson.D, key string) any {
	v, _ := bsonutil.Field(d, key)
	return v
}
