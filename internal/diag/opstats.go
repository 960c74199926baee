package diag

import (
	"maps"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/opstats"
)

// Top is mongotop's source: time and count per namespace and kind, in
// microseconds, since the server started.
func Top(stats *opstats.Stats) bson.D {
	all := stats.Namespaces()
	totals := bson.D{{Key: "note", Value: "all times in microseconds"}}
	for _, ns := range slices.Sorted(maps.Keys(all)) {
		n := all[ns]
		totals = append(totals, bson.E{Key: ns, Value: bson.D{
			{Key: "total", Value: timedDoc(n.Total)},
			{Key: "readLock", Value: timedDoc(n.ReadLock)},
			{Key: "writeLock", Value: timedDoc(n.WriteLock)},
			{Key: "queries", Value: timedDoc(n.Kinds[opstats.KindQuery])},
			{Key: "getmore", Value: timedDoc(n.Kinds[opstats.KindGetMore])},
			{Key: "insert", Value: timedDoc(n.Kinds[opstats.KindInsert])},
			{Key: "update", Value: timedDoc(n.Kinds[opstats.KindUpdate])},
			{Key: "remove", Value: timedDoc(n.Kinds[opstats.KindRemove])},
			{Key: "commands", Value: timedDoc(n.Kinds[opstats.KindCommand])},
		}})
	}
	return bson.D{{Key: "totals", Value: totals}}
}

func timedDoc(t opstats.Timed) bson.D {
	return bson.D{{Key: "time", Value: t.Time.Microseconds()}, {Key: "count", Value: t.Count}}
}

// Asserts is serverStatus.asserts.
func Asserts(stats *opstats.Stats) bson.D {
	a := stats.Asserts()
	return bson.D{
		{Key: "regular", Value: int32(a.Regular)},
		{Key: "warning", Value: int32(a.Warning)},
		{Key: "msg", Value: int32(a.Msg)},
		{Key: "user", Value: int32(a.User)},
		{Key: "tripwire", Value: int32(a.Tripwire)},
		{Key: "rollovers", Value: int32(0)},
	}
}

// GlobalLock is serverStatus.globalLock. Mayfly has no global lock, so
// totalTime is the uptime, the queue holds the writers waiting for an
// fsync lock (queued), and the active clients are the reads and writes
// running now.
func GlobalLock(stats *opstats.Stats, queued int64, uptime time.Duration) bson.D {
	readers := stats.Active(opstats.Reads)
	writers := stats.Active(opstats.Writes)
	return bson.D{
		{Key: "totalTime", Value: uptime.Microseconds()},
		{Key: "currentQueue", Value: bson.D{
			{Key: "total", Value: int32(queued)}, {Key: "readers", Value: int32(0)}, {Key: "writers", Value: int32(queued)},
		}},
		{Key: "activeClients", Value: bson.D{
			{Key: "total", Value: int32(readers + writers)}, {Key: "readers", Value: int32(readers)}, {Key: "writers", Value: int32(writers)},
		}},
	}
}

// OpLatencies is serverStatus.opLatencies.
func OpLatencies(stats *opstats.Stats) bson.D {
	class := func(c opstats.Class) bson.D {
		t := stats.Class(c)
		return bson.D{{Key: "latency", Value: t.Time.Microseconds()}, {Key: "ops", Value: t.Count}}
	}
	return bson.D{
		{Key: "reads", Value: class(opstats.Reads)},
		{Key: "writes", Value: class(opstats.Writes)},
		{Key: "commands", Value: class(opstats.Commands)},
		{Key: "transactions", Value: bson.D{{Key: "latency", Value: int64(0)}, {Key: "ops", Value: int64(0)}}},
	}
}

// CommandMetrics is serverStatus.metrics.commands: per command run, how
// many ran and how many failed, in name order.
func CommandMetrics(stats *opstats.Stats) bson.D {
	all := stats.Commands()
	out := bson.D{}
	for _, name := range slices.Sorted(maps.Keys(all)) {
		c := all[name]
		out = append(out, bson.E{Key: name, Value: bson.D{
			{Key: "failed", Value: c.Failed}, {Key: "total", Value: int64(c.Latency.Total)},
		}})
	}
	return out
}
