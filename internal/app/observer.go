package app

import (
	"context"
	"log/slog"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/activity"
	"github.com/mayflydb/mayfly/internal/backup"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/expirywatch"
	"github.com/mayflydb/mayfly/internal/profiler"
)

// ttlObserver shows the TTL monitor's deletion batches in currentOp while
// they run, and in <db>.system.profile when that database is profiled.
type ttlObserver struct {
	ops *activity.Registry
	// profiles says which databases profile a batch, written to store.
	profiles *activity.Profiler
	store    *docstore.Store
	logger   *slog.Logger
	clock    clock.Clock
	// fsync holds deletion while db.fsyncLock() is in force.
	fsync *backup.Lock
	// watch hears of each batch's deletions, for the expiry metrics.
	watch *expirywatch.Watch
}

func (o *ttlObserver) BatchStarted(ns, index string) func(docstore.ExpireResult, error) {
	_ = o.fsync.Wait(context.Background()) // Shutdown releases the lock
	db, coll, _ := strings.Cut(ns, ".")
	command := bson.D{{Key: "delete", Value: coll}, {Key: "ttlIndex", Value: index}}
	started := o.clock.Now()
	id := o.ops.Begin(activity.Op{Desc: "TTLMonitor", Kind: "remove", NS: ns, Command: command})
	return func(res docstore.ExpireResult, err error) {
		o.ops.End(id)
		if err == nil {
			o.watch.Deleted(ns, index, res.Expiries, o.clock.Now())
		}
		d := o.clock.Now().Sub(started)
		if err != nil || res.Deleted == 0 || !o.profiles.ShouldProfile(db, d) {
			return
		}
		profiler.Record(o.store, o.logger, db, bson.D{
			{Key: "op", Value: "remove"},
			{Key: "ns", Value: ns},
			{Key: "command", Value: command},
			{Key: "ndeleted", Value: int32(res.Deleted)},
			{Key: "keysDeleted", Value: int32(res.DeletedKeys)},
			{Key: "millis", Value: d.Milliseconds()},
			{Key: "ts", Value: bson.NewDateTimeFromTime(started)},
			{Key: "client", Value: "TTLMonitor"},
			{Key: "user", Value: ""},
		})
	}
}
