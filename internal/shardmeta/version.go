package shardmeta

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// ChunkVersion is a chunk's, a shard's or a collection's placement
// version. Epoch and Timestamp name the collection's incarnation; Major
// changes when a chunk moves between shards, Minor when chunks are split
// or merged on one shard.
type ChunkVersion struct {
	Epoch     bson.ObjectID
	Timestamp bson.Timestamp
	Major     uint32
	Minor     uint32
}

// Unsharded is the version routers send for a collection that is not
// sharded: zero epoch, timestamp and counters.
var Unsharded = ChunkVersion{}

// Placement returns the version's counters as config.chunks' lastmod
// stores them: Timestamp(major, minor).
func (v ChunkVersion) Placement() bson.Timestamp {
	return bson.Timestamp{T: v.Major, I: v.Minor}
}

// withPlacement returns v's collection with the counters of lastmod.
func (v ChunkVersion) withPlacement(lastmod bson.Timestamp) ChunkVersion {
	v.Major, v.Minor = lastmod.T, lastmod.I
	return v
}

// Doc is the version as a router sends it in a command's shardVersion
// (mongod's ChunkVersion60Format): {e: epoch, t: timestamp, v:
// Timestamp(major, minor)}.
func (v ChunkVersion) Doc() bson.D {
	return bson.D{{Key: "e", Value: v.Epoch}, {Key: "t", Value: v.Timestamp}, {Key: "v", Value: v.Placement()}}
}

// ParseChunkVersion reads the {e, t, v} form.
func ParseChunkVersion(d bson.D) (ChunkVersion, error) {
	var v ChunkVersion
	var seen int
	for _, e := range d {
		var ok bool
		switch e.Key {
		case "e":
			v.Epoch, ok = e.Value.(bson.ObjectID)
		case "t":
			v.Timestamp, ok = e.Value.(bson.Timestamp)
		case "v":
			var p bson.Timestamp
			p, ok = e.Value.(bson.Timestamp)
			v = v.withPlacement(p)
		default:
			continue
		}
		if !ok {
			return ChunkVersion{}, fmt.Errorf("shardmeta: shard version field %s is a %T", e.Key, e.Value)
		}
		seen++
	}
	if seen != 3 {
		return ChunkVersion{}, fmt.Errorf("shardmeta: shard version %v lacks e, t or v", d)
	}
	return v, nil
}

// SameCollection reports whether both versions belong to one incarnation
// of the collection.
func (v ChunkVersion) SameCollection(o ChunkVersion) bool {
	return v.Epoch == o.Epoch && v.Timestamp == o.Timestamp
}

// IsOlderThan orders versions as mongod's ChunkVersion::isOlderThan: an
// earlier incarnation (by timestamp) is older whatever its counters;
// within one incarnation, by major then minor.
func (v ChunkVersion) IsOlderThan(o ChunkVersion) bool {
	if v.Timestamp != o.Timestamp {
		return v.Timestamp.Compare(o.Timestamp) < 0
	}
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	return v.Minor < o.Minor
}

// IsWriteCompatibleWith is the check a shard makes on the version a
// router sent: the same incarnation and the same major version. A minor
// difference (a split elsewhere on the shard) does not change what the
// shard owns for the router's purpose; anything else means one side is
// stale and the shard answers StaleConfig.
func (v ChunkVersion) IsWriteCompatibleWith(o ChunkVersion) bool {
	return v.SameCollection(o) && v.Major == o.Major
}

// String formats the version as mongod logs it: "major|minor||epoch||timestamp".
func (v ChunkVersion) String() string {
	return fmt.Sprintf("%d|%d||%s||Timestamp(%d, %d)", v.Major, v.Minor, v.Epoch.Hex(), v.Timestamp.T, v.Timestamp.I)
}
