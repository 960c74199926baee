package migrate

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// The shard-local collections (database "config") that hold a
// migration's replicated records, as mongod's.
const (
	RecordDB              = "config"
	CoordinatorsColl      = "migrationCoordinators"
	RangeDeletionsColl    = "rangeDeletions"
	CoordinatorsNamespace = RecordDB + "." + CoordinatorsColl
)

// Coordinator is the donor's record of a migration it runs, written
// before each phase so that a new primary knows how far it got.
type Coordinator struct {
	ID             string         `bson:"_id"`
	Namespace      string         `bson:"nss"`
	CollectionUUID bson.Binary    `bson:"collectionUuid"`
	Donor          string         `bson:"donorShardId"`
	Recipient      string         `bson:"recipientShardId"`
	Range          Range          `bson:"range"`
	Phase          Phase          `bson:"phase"`
	PreMigration   bson.Timestamp `bson:"preMigrationChunkVersion"`
}

// RangeDeletion is a shard's task to delete the documents of a range it
// does not own: the donor's copy after a commit, the recipient's partial
// copy after an abort. Pending tasks wait for the migration's outcome;
// the range deleter runs the others once NotBefore has passed.
type RangeDeletion struct {
	ID             string        `bson:"_id"`
	Namespace      string        `bson:"nss"`
	CollectionUUID bson.Binary   `bson:"collectionUuid"`
	Range          Range         `bson:"range"`
	KeyPattern     bson.D        `bson:"keyPattern"`
	Donor          bool          `bson:"donor"`
	Pending        bool          `bson:"pending"`
	NotBefore      bson.DateTime `bson:"whenToClean"`
}

// DonorTaskID and RecipientTaskID name a migration's range deletion
// tasks on each side.
func DonorTaskID(migration string) string     { return migration + "-donor" }
func RecipientTaskID(migration string) string { return migration + "-recipient" }
