package router

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/diag"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// SetServerStats connects serverStatus to the network server's counters
// (connections and traffic); until then they read zero.
func (r *Router) SetServerStats(f func() server.Stats) { r.serverStats = f }

// cmdServerStatus answers serverStatus as mongos does, from the router's
// own process: its connections and traffic, the commands it answered
// (opcounters, counted as a mongod counts them), its memory, and its
// commands' latencies and failures.
func cmdServerStatus(r *Router, _ *operation) (bson.D, error) {
	var s server.Stats
	if r.serverStats != nil {
		s = r.serverStats()
	}
	c := &r.opCounts
	return append(diag.ProcessHeader(r.cfg.Version, "mongos", r.started.Time(), r.clock.Now()), bson.D{
		{Key: "connections", Value: bson.D{{Key: "current", Value: int32(s.Current)},
			{Key: "available", Value: int32(s.Available)}, {Key: "totalCreated", Value: int32(s.TotalCreated)}}},
		{Key: "extra_info", Value: diag.ExtraInfo()},
		{Key: "network", Value: diag.Network(s.BytesIn, s.BytesOut, s.Requests)},
		{Key: "opcounters", Value: bson.D{{Key: "insert", Value: c.Insert.Load()}, {Key: "query", Value: c.Query.Load()},
			{Key: "update", Value: c.Update.Load()}, {Key: "delete", Value: c.Delete.Load()},
			{Key: "getmore", Value: c.GetMore.Load()}, {Key: "command", Value: c.Command.Load()}}},
		{Key: "mem", Value: diag.Mem()},
		{Key: "opLatencies", Value: diag.OpLatencies(r.stats)},
		{Key: "asserts", Value: diag.Asserts(r.stats)},
		{Key: "metrics", Value: bson.D{{Key: "commands", Value: diag.CommandMetrics(r.stats)}}},
	}...), nil
}

// record counts a finished command: its writes in opcounters, its time
// in opLatencies and metrics.commands, a failure in asserts (regular for
// the router's own InternalError, user otherwise); one slower than
// slowms is logged, by name (a command's fields may hold secrets).
func (r *Router) record(op *operation, reply bson.D, err error, d time.Duration) {
	if err == nil {
		r.opCounts.Done(op.name, op.body, reply)
	}
	var code mongoerr.Code
	if err != nil {
		code = mongoerr.As(err).Code
	} else if _, ok := bsonutil.Field(reply, "ok"); ok { // a shard's reply passed on; the router's own add ok later
		code = wireclient.ReplyCode(reply)
	}
	r.stats.Record(op.name, "", d, code != 0, code == mongoerr.InternalError)
	if r.profiler.Slow(d) && !isHandshake(op.name) && op.name != "getMore" { // those two wait by design
		r.log.Info("Slow query", "command", op.name, "db", op.db, "durationMillis", d.Milliseconds(), "code", int32(code))
	}
}

// cmdProfile is mongos's profile: the router keeps no system.profile, so
// it takes level 0, to set slowms for its log of slow operations, and -1.
func cmdProfile(r *Router, op *operation) (bson.D, error) {
	return r.profiler.Command(op.db, op.body, func(level int64) error {
		if level == 0 || level == -1 {
			return nil
		}
		return mongoerr.New(mongoerr.BadValue, "Profiling is not permitted on mongoS: the 'profile' field should be 0 to change 'slowms', 'sampleRate', or 'filter' settings for logging, or -1 to view current values")
	})
}
