package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/diag"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/session"
	"github.com/mayflydb/mayfly/internal/shardcmds"
	"github.com/mayflydb/mayfly/internal/wire"
)

// Version is the MongoDB version Mayfly answers as: its TTL rules and
// reply shapes are those of 8.0.
const (
	Version        = "8.0.0"
	MayflyVersion  = "0.1.0"
	maxWireVersion = 25
	sessionMinutes = session.TimeoutMinutes
)

// clientMetadataKey holds the clientMetadata of a connection whose first
// hello carried `client`.
const clientMetadataKey = "clientMetadata"

func cmdHello(h *Handler, r *request) (bson.D, error) {
	if err := checkClientMetadata(r); err != nil {
		return nil, err
	}
	var reply bson.D
	if v, ok := bsonutil.Field(r.body, "helloOk"); ok && v == true {
		reply = append(reply, bson.E{Key: "helloOk", Value: true})
	}
	primaryKey := "ismaster"
	if r.name == "hello" {
		primaryKey = "isWritablePrimary"
	}
	writable, replFields := true, bson.D(nil)
	if h.deps.Repl != nil {
		var err error
		if writable, replFields, err = h.helloReplFields(r); err != nil {
			return nil, err
		}
	}
	reply = append(reply, bson.E{Key: primaryKey, Value: writable})
	reply = append(reply, replFields...)
	reply = append(reply, shardcmds.HelloFields(h.deps.ClusterRole)...)
	reply = append(reply,
		bson.E{Key: "maxBsonObjectSize", Value: int32(wire.MaxBSONObjectSize)},
		bson.E{Key: "maxMessageSizeBytes", Value: int32(wire.MaxMessageSize)},
		bson.E{Key: "maxWriteBatchSize", Value: int32(wire.MaxWriteBatchSize)},
		bson.E{Key: "localTime", Value: bson.NewDateTimeFromTime(h.deps.Clock.Now())},
		bson.E{Key: "logicalSessionTimeoutMinutes", Value: int32(sessionMinutes)},
		bson.E{Key: "connectionId", Value: int32(r.conn.ID())},
		bson.E{Key: "minWireVersion", Value: int32(0)},
		bson.E{Key: "maxWireVersion", Value: int32(maxWireVersion)},
		bson.E{Key: "readOnly", Value: false},
	)
	reply = append(reply, h.deps.Auth.HelloFields(r.conn, r.secret)...)
	return append(reply, r.conn.CompressionReply(r.body)...), nil
}

func checkClientMetadata(r *request) error {
	if _, ok := bsonutil.Field(r.body, "client"); !ok {
		return nil
	}
	if r.conn.Value(clientMetadataKey) != nil {
		return mongoerr.New(mongoerr.ClientMetadataCannotBeMutated, "The client metadata document may only be sent in the first hello")
	}
	r.conn.SetValue(clientMetadataKey, clientMetadata{appName: appNameOf(r.body)})
	return nil
}

func cmdPing(*Handler, *request) (bson.D, error) { return bson.D{}, nil }

func cmdBuildInfo(h *Handler, r *request) (bson.D, error) {
	return append(diag.BuildInfo(Version, "mayfly-"+MayflyVersion),
		bson.E{Key: "storageEngines", Value: bson.A{"pebble"}},
		bson.E{Key: "mayflyVersion", Value: MayflyVersion}), nil
}

func cmdGetLog(h *Handler, r *request) (bson.D, error) {
	return diag.GetLog(h.deps.Log, r.body[0].Value)
}

func cmdGetCmdLineOpts(h *Handler, r *request) (bson.D, error) {
	return diag.CmdLineOpts(h.deps.Argv, h.deps.Parsed), nil
}

func cmdHostInfo(h *Handler, _ *request) (bson.D, error) {
	return diag.HostInfo(h.deps.Clock.Now()), nil
}

func cmdWhatsMyURI(h *Handler, r *request) (bson.D, error) {
	return bson.D{{Key: "you", Value: r.conn.RemoteAddr()}}, nil
}

func cmdListDatabases(h *Handler, r *request) (bson.D, error) {
	if err := checkFields(r, "filter", "nameOnly", "authorizedDatabases"); err != nil {
		return nil, err
	}
	f, nameOnly, err := listingArgs(r)
	if err != nil {
		return nil, err
	}
	dbs := bson.A{}
	var total int64
	for _, name := range h.deps.Store.DatabaseNames() {
		size := h.databaseSize(name)
		entry := bson.D{{Key: "name", Value: name}, {Key: "sizeOnDisk", Value: size}, {Key: "empty", Value: size == 0}}
		if !f.Match(entry) || !h.listable(r, name) {
			continue
		}
		total += size
		if nameOnly {
			entry = entry[:1]
		}
		dbs = append(dbs, entry)
	}
	if nameOnly {
		return bson.D{{Key: "databases", Value: dbs}}, nil
	}
	return bson.D{{Key: "databases", Value: dbs}, {Key: "totalSize", Value: total}, {Key: "totalSizeMb", Value: total >> 20}}, nil
}

func (h *Handler) databaseSize(db string) int64 {
	var size int64
	for _, name := range h.deps.Store.CollectionNames(db) {
		if c := h.deps.Store.Collection(db, name); c != nil {
			// A collection always occupies some space, so an existing database
			// is never reported empty.
			size += c.DataSize() + 4096
		}
	}
	return size
}

func cmdServerStatus(h *Handler, r *request) (bson.D, error) {
	now := h.deps.Clock.Now()
	uptime := now.Sub(h.started)
	return h.withReplStatus(append(diag.ProcessHeader(Version, "mayfly", h.started, now), bson.D{
		{Key: "asserts", Value: diag.Asserts(h.deps.OpStats)},
		{Key: "connections", Value: h.connectionsStatus()},
		{Key: "extra_info", Value: diag.ExtraInfo()},
		{Key: "globalLock", Value: diag.GlobalLock(h.deps.OpStats, h.deps.Fsync.Waiting(), uptime)},
		{Key: "network", Value: h.networkStatus()},
		{Key: "opLatencies", Value: diag.OpLatencies(h.deps.OpStats)},
		{Key: "opcounters", Value: h.opcounters()},
		{Key: "mem", Value: diag.Mem()},
		{Key: "mayflyMemory", Value: h.memoryStatus()},
		{Key: "metrics", Value: h.metricsStatus()},
		{Key: "storageEngine", Value: bson.D{{Key: "name", Value: "pebble"}, {Key: "persistent", Value: h.deps.DataDir != ""}}},
		{Key: "mayflyCache", Value: h.cacheStatus()},
	}...)), nil
}

// cacheStatus is serverStatus.mayflyCache: the resident cache in front of
// the storage engine (docs/design/0002), all zero without one.
func (h *Handler) cacheStatus() bson.D {
	st, _ := h.deps.Store.ResidentStats()
	return bson.D{
		{Key: "hits", Value: st.Hits},
		{Key: "misses", Value: st.Misses},
		{Key: "bytes", Value: st.Bytes},
		{Key: "maxBytes", Value: st.MaxBytes},
		{Key: "items", Value: st.Items},
		{Key: "evictions", Value: st.Evictions},
		{Key: "expiredEvictions", Value: st.ExpiredEvictions},
		{Key: "invalidations", Value: st.Invalidations},
		{Key: "warmUps", Value: st.WarmUps},
		{Key: "warmedRanges", Value: st.Warmed},
		{Key: "filterBytes", Value: st.FilterBytes},
		{Key: "claimedRanges", Value: st.Claimed},
		{Key: "pendingDocuments", Value: st.PendingItems},
		{Key: "pendingBytes", Value: st.PendingBytes},
	}
}

func (h *Handler) connectionsStatus() bson.D {
	var cur, total int64
	available := int64(1000000)
	if h.deps.ServerStats != nil {
		s := h.deps.ServerStats()
		cur, total, available = s.Current, s.TotalCreated, s.Available
	}
	return bson.D{
		{Key: "current", Value: int32(cur)},
		{Key: "available", Value: int32(available)},
		{Key: "totalCreated", Value: int32(total)},
	}
}

func (h *Handler) opcounters() bson.D {
	c := &h.opCounts
	return bson.D{
		{Key: "insert", Value: c.Insert.Load()},
		{Key: "query", Value: c.Query.Load()},
		{Key: "update", Value: c.Update.Load()},
		{Key: "delete", Value: c.Delete.Load()},
		{Key: "getmore", Value: c.GetMore.Load()},
		{Key: "command", Value: c.Command.Load()},
	}
}

func (h *Handler) metricsStatus() bson.D {
	var ttl TTLStats
	if h.deps.TTLStats != nil {
		ttl = h.deps.TTLStats()
	}
	return bson.D{
		{Key: "commands", Value: diag.CommandMetrics(h.deps.OpStats)},
		{Key: "cursor", Value: bson.D{
			{Key: "timedOut", Value: h.deps.Cursors.TimedOut()},
			{Key: "open", Value: bson.D{{Key: "total", Value: int64(h.deps.Cursors.Open())}}},
		}},
		{Key: "ttl", Value: bson.D{
			{Key: "deletedDocuments", Value: ttl.DeletedDocuments},
			{Key: "deletedKeys", Value: ttl.DeletedKeys},
			{Key: "passes", Value: ttl.Passes},
			{Key: "subPasses", Value: ttl.SubPasses},
			{Key: "refreshedOnRead", Value: h.deps.Store.RefreshedOnRead()},
			{Key: "catchUpBatches", Value: ttl.CatchUpBatches},
		}},
		{Key: "lru", Value: bson.D{{Key: "evictedDocuments", Value: h.deps.Store.LRUEvicted()}}},
	}
}
