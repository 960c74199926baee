package migrate

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// The shard-local collections (database "config") that hold a
// migration's replicated records, as mongod's.
const (
	RecordDB           = "config"
	CoordinatorsColl   = "migrationCoordinators"
	RangeDeletionsColl = "rangeDeletions"
	// DocumentMovesColl holds the document moves in progress
	// (internal/docmove).
	DocumentMovesColl     = "documentMoves"
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

// DocumentMove is the record of a shard key change that moves a
// document to the shard owning its new value, kept by the shard that
// held it until the move is finished (internal/docmove).
type DocumentMove struct {
	ID        string       `bson:"_id"`
	Namespace string       `bson:"ns"`
	ToShard   string       `bson:"toShard"`
	Pre       bson.D       `bson:"preImage"`
	Post      bson.D       `bson:"postImage"`
	Result    bson.D       `bson:"result,omitempty"`
	Session   *MoveSession `bson:"session,omitempty"`
	// Inserted: the owner acknowledged the new document.
	Inserted bool `bson:"inserted"`
}

// MoveSession is the retryable write a document move is a statement of.
type MoveSession struct {
	LSID   []byte `bson:"lsid"`
	Label  string `bson:"label"`
	Txn    int64  `bson:"txnNumber"`
	StmtID int32  `bson:"stmtId"`
}
