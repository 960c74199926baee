package shardmeta

import (
	"crypto/rand"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The config database's collections this package describes.
const (
	ShardsCollection      = "shards"
	DatabasesCollection   = "databases"
	CollectionsCollection = "collections"
	ChunksCollection      = "chunks"
	VersionCollection     = "version"
	SettingsCollection    = "settings"
	ChangelogCollection   = "changelog"
	MongosCollection      = "mongos"
)

// ShardStateActive is config.shards' state once a shard is aware that it
// is one (ShardType::ShardState::kShardAware).
const ShardStateActive int32 = 1

// Shard is a config.shards document.
type Shard struct {
	ID                   string         `bson:"_id"`
	Host                 string         `bson:"host"` // "setName/host:port,host:port"
	State                int32          `bson:"state"`
	TopologyTime         bson.Timestamp `bson:"topologyTime"`
	ReplSetConfigVersion int64          `bson:"replSetConfigVersion"`
	Tags                 []string       `bson:"tags,omitempty"`
	Draining             bool           `bson:"draining,omitempty"`
}

// DatabaseVersion is a database's placement version: a new UUID and
// timestamp when the database is created, lastMod bumped when its primary
// shard moves.
type DatabaseVersion struct {
	UUID      bson.Binary    `bson:"uuid"`
	Timestamp bson.Timestamp `bson:"timestamp"`
	LastMod   int32          `bson:"lastMod"`
}

// Database is a config.databases document.
type Database struct {
	ID      string          `bson:"_id"`
	Primary string          `bson:"primary"`
	Version DatabaseVersion `bson:"version"`
	// Partitioned is read from documents older versions wrote; 8.0 no
	// longer writes it.
	Partitioned *bool `bson:"partitioned,omitempty"`
}

// Collection is a config.collections document. Epoch and Timestamp name
// one incarnation of the collection: they change only when it is dropped
// and sharded again (or its key is refined), never with chunk moves.
type Collection struct {
	ID                string         `bson:"_id"` // "db.coll"
	Epoch             bson.ObjectID  `bson:"lastmodEpoch"`
	Lastmod           bson.DateTime  `bson:"lastmod"`
	Timestamp         bson.Timestamp `bson:"timestamp"`
	UUID              bson.Binary    `bson:"uuid"`
	Key               bson.D         `bson:"key"`
	Unique            bool           `bson:"unique"`
	NoBalance         bool           `bson:"noBalance"`
	DefaultCollation  bson.D         `bson:"defaultCollation,omitempty"`
	MaxChunkSizeBytes *int64         `bson:"maxChunkSizeBytes,omitempty"`
	EnableAutoMerge   *bool          `bson:"enableAutoMerge,omitempty"`
	AllowMigrations   *bool          `bson:"allowMigrations,omitempty"`
	PermitMigrations  *bool          `bson:"permitMigrations,omitempty"`
	Unsplittable      bool           `bson:"unsplittable,omitempty"`
}

// ChunkHistory is one entry of a chunk's placement history, newest first.
type ChunkHistory struct {
	ValidAfter bson.Timestamp `bson:"validAfter"`
	Shard      string         `bson:"shard"`
}

// Chunk is a config.chunks document: the shard key range [Min, Max) of
// the collection with UUID, owned by Shard. Lastmod is the chunk's
// version, major in T and minor in I, as mongod stores it.
type Chunk struct {
	ID                     bson.ObjectID  `bson:"_id"`
	UUID                   bson.Binary    `bson:"uuid"`
	Min                    bson.D         `bson:"min"`
	Max                    bson.D         `bson:"max"`
	Shard                  string         `bson:"shard"`
	Lastmod                bson.Timestamp `bson:"lastmod"`
	EstimatedDataSizeBytes *int64         `bson:"estimatedDataSizeBytes,omitempty"`
	Jumbo                  bool           `bson:"jumbo,omitempty"`
	OnCurrentShardSince    bson.Timestamp `bson:"onCurrentShardSince"`
	History                []ChunkHistory `bson:"history"`
}

// ClusterVersion is the config.version document.
type ClusterVersion struct {
	ID        int32         `bson:"_id"` // always 1
	ClusterID bson.ObjectID `bson:"clusterId"`
}

// Balancer is config.settings' {_id: "balancer"} document; no document
// means the balancer is on (sh.getBalancerState).
type Balancer struct {
	ID                          string        `bson:"_id"`  // "balancer"
	Mode                        string        `bson:"mode"` // "full" or "off"
	Stopped                     bool          `bson:"stopped"`
	ActiveWindow                *ActiveWindow `bson:"activeWindow,omitempty"`
	SecondaryThrottle           any           `bson:"_secondaryThrottle,omitempty"`
	WaitForDelete               *bool         `bson:"_waitForDelete,omitempty"`
	AttemptToBalanceJumboChunks *bool         `bson:"attemptToBalanceJumboChunks,omitempty"`
}

// ActiveWindow limits the balancer to a time of day ("HH:MM").
type ActiveWindow struct {
	Start string `bson:"start"`
	Stop  string `bson:"stop"`
}

// Toggle is a config.settings document that switches a feature:
// {_id: "automerge", enabled} or {_id: "autosplit", enabled}.
type Toggle struct {
	ID      string `bson:"_id"`
	Enabled bool   `bson:"enabled"`
}

// ChunkSize is config.settings' {_id: "chunksize", value} in megabytes.
type ChunkSize struct {
	ID    string `bson:"_id"` // "chunksize"
	Value int32  `bson:"value"`
}

// ChangelogEntry is a config.changelog document; _id is
// "<server>-<time>-<oid>".
type ChangelogEntry struct {
	ID         string        `bson:"_id"`
	Server     string        `bson:"server"`
	Shard      string        `bson:"shard"`
	ClientAddr string        `bson:"clientAddr"`
	Time       bson.DateTime `bson:"time"`
	What       string        `bson:"what"` // e.g. "shardCollection.start", "moveChunk.from"
	NS         string        `bson:"ns"`
	Details    bson.D        `bson:"details"`
}

// Mongos is a config.mongos document: one router's heartbeat.
type Mongos struct {
	ID                string         `bson:"_id"` // "host:port"
	Ping              bson.DateTime  `bson:"ping"`
	Up                int64          `bson:"up"` // seconds
	Waiting           bool           `bson:"waiting"`
	MongoVersion      string         `bson:"mongoVersion"`
	AdvisoryHostFQDNs []string       `bson:"advisoryHostFQDNs"`
	ConfigVersion     *int32         `bson:"configVersion,omitempty"`
	Created           *bson.DateTime `bson:"created,omitempty"`
}

// NewUUID returns a random (version 4) UUID as BSON binary subtype 4, the
// form of config.collections' and config.chunks' uuid.
func NewUUID() (bson.Binary, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return bson.Binary{}, fmt.Errorf("shardmeta: new UUID: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return bson.Binary{Subtype: bson.TypeBinaryUUID, Data: u[:]}, nil
}

// Encode returns a metadata document as BSON, in 8.0's field order.
func Encode(doc any) (bson.Raw, error) {
	raw, err := bson.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("shardmeta: encode %T: %w", doc, err)
	}
	return raw, nil
}

// Decode reads a metadata document into out (a *Shard, *Chunk, ...).
func Decode(raw bson.Raw, out any) error {
	if err := bson.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("shardmeta: decode %T: %w", out, err)
	}
	return nil
}

// ConfigCollections lists the config collections whose documents this
// package describes.
func ConfigCollections() []string {
	return []string{ShardsCollection, DatabasesCollection, CollectionsCollection, ChunksCollection,
		VersionCollection, SettingsCollection, ChangelogCollection, MongosCollection}
}
