package shardstate

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// Ignored is mongod's ChunkVersion::IGNORED(): a version that asks the
// shard to skip the placement check (zero epoch, the largest timestamp,
// 0|0). The operation is still versioned, so orphans stay hidden.
var Ignored = shardmeta.ChunkVersion{Timestamp: bson.Timestamp{T: math.MaxUint32, I: math.MaxUint32}}

// isSet is mongod's ChunkVersion::isSet: the version names some chunk
// placement (major|minor above 0|0).
func isSet(v shardmeta.ChunkVersion) bool { return v.Major > 0 || v.Minor > 0 }

// CheckShardVersion compares the shardVersion a router sent for ns with
// the version this shard holds (wanted; nil when the shard does not know
// the collection's placement) as mongod's
// CollectionShardingRuntime::checkShardVersionOrThrow does, and returns
// nil or StaleConfig (13388) carrying StaleConfigInfo: ns, vReceived,
// vWanted (absent when unknown) and shardId, with mongod's message for
// the reason.
func CheckShardVersion(ns string, received shardmeta.ChunkVersion, wanted *shardmeta.ChunkVersion, shardID string) error {
	if wanted == nil {
		return staleConfig(ns, received, nil, shardID, "sharding status of collection "+ns+
			" is not currently available for filtering and needs to be recovered from the config server")
	}
	if received == Ignored || wanted.IsWriteCompatibleWith(received) {
		return nil
	}
	return staleConfig(ns, received, wanted, shardID, mismatchReason(ns, received, *wanted))
}

// mismatchReason is mongod's message for each way two versions differ.
func mismatchReason(ns string, received, wanted shardmeta.ChunkVersion) string {
	switch {
	case !wanted.SameCollection(received):
		return "timestamp mismatch detected for " + ns
	case !isSet(wanted) && isSet(received):
		return "this shard no longer contains chunks for " + ns + ", the collection may have been dropped"
	case isSet(wanted) && !isSet(received):
		return "this shard contains chunks for " + ns + ", but the client expects unsharded collection"
	}
	return "placement version mismatch detected for " + ns
}

func staleConfig(ns string, received shardmeta.ChunkVersion, wanted *shardmeta.ChunkVersion, shardID, msg string) error {
	extra := []mongoerr.KV{{Key: "ns", Value: ns}, {Key: "vReceived", Value: received.Doc()}}
	if wanted != nil {
		extra = append(extra, mongoerr.KV{Key: "vWanted", Value: wanted.Doc()})
	}
	extra = append(extra, mongoerr.KV{Key: "shardId", Value: shardID})
	return &mongoerr.Error{Code: mongoerr.StaleConfig, Msg: msg, Extra: extra}
}

// CheckDatabaseVersion compares the databaseVersion a router sent for db
// with the one this shard holds (nil when it holds none: it is not the
// database's primary shard, or the database does not exist) as mongod's
// DatabaseShardingRuntime::checkDbVersionOrThrow, and returns nil or
// StaleDbVersion (249) carrying db, vReceived and vWanted.
func CheckDatabaseVersion(db string, received shardmeta.DatabaseVersion, wanted *shardmeta.DatabaseVersion) error {
	if wanted == nil {
		return staleDB(db, received, nil, "No cached info for the database "+db)
	}
	if sameDatabaseVersion(received, *wanted) {
		return nil
	}
	return staleDB(db, received, wanted, "Version mismatch for the database "+db)
}

func sameDatabaseVersion(a, b shardmeta.DatabaseVersion) bool {
	return a.Timestamp == b.Timestamp && a.LastMod == b.LastMod && a.UUID.Subtype == b.UUID.Subtype && string(a.UUID.Data) == string(b.UUID.Data)
}

func staleDB(db string, received shardmeta.DatabaseVersion, wanted *shardmeta.DatabaseVersion, msg string) error {
	extra := []mongoerr.KV{{Key: "db", Value: db}, {Key: "vReceived", Value: databaseVersionDoc(received)}}
	if wanted != nil {
		extra = append(extra, mongoerr.KV{Key: "vWanted", Value: databaseVersionDoc(*wanted)})
	}
	return &mongoerr.Error{Code: mongoerr.StaleDbVersion, Msg: msg, Extra: extra}
}

// databaseVersionDoc is DatabaseVersion's wire form {uuid, timestamp,
// lastMod}.
func databaseVersionDoc(v shardmeta.DatabaseVersion) bson.D {
	return bson.D{{Key: "uuid", Value: v.UUID}, {Key: "timestamp", Value: v.Timestamp}, {Key: "lastMod", Value: v.LastMod}}
}

// ParseDatabaseVersion reads a databaseVersion field.
func ParseDatabaseVersion(d bson.D) (shardmeta.DatabaseVersion, error) {
	raw, err := bson.Marshal(d)
	if err != nil {
		return shardmeta.DatabaseVersion{}, err
	}
	var v shardmeta.DatabaseVersion
	if err := bson.Unmarshal(raw, &v); err != nil {
		return shardmeta.DatabaseVersion{}, mongoerr.Newf(mongoerr.TypeMismatch, "databaseVersion: %v", err)
	}
	return v, nil
}

// routerIsBehind reports whether the shard's cached version is newer than
// the router's, so that refreshing the cache cannot make them agree and
// StaleConfig goes back at once: the router must refresh. UNSHARDED is
// never behind a cached incarnation: the collection may have been dropped
// since (through a router, whose drop the shard's cache does not hear of,
// on any member), which only the config servers can tell; mongod's drop
// coordinator clears the shards' metadata instead.
func routerIsBehind(received, wanted shardmeta.ChunkVersion) bool {
	return received != shardmeta.Unsharded && received.IsOlderThan(wanted)
}

// routerDBIsBehind is routerIsBehind for database versions: ordered by
// timestamp, then lastMod.
func routerDBIsBehind(received, wanted shardmeta.DatabaseVersion) bool {
	if c := received.Timestamp.Compare(wanted.Timestamp); c != 0 {
		return c < 0
	}
	return received.LastMod < wanted.LastMod
}
