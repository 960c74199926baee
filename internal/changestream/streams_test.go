package changestream

import (
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// testHost is a server without documents whose replies carry events of
// up to 16 MiB, encoded as they are.
type testHost struct{}

var _ Host = testHost{}

func (testHost) Current(string, string, any) (bson.D, error) { return nil, nil }
func (testHost) EncodeEvent(d bson.D) ([]byte, error)        { return bsonutil.Marshal(d) }
func (testHost) MaxEventBytes() int                          { return 16<<20 + 16<<10 }

// newTestStreams is the shared state of streams that are given their
// changes by the test, not read from a log.
func newTestStreams() *Streams {
	return &Streams{events: newEventCache(), host: testHost{}}
}

// testEnv runs stages that read no other collection.
type testEnv struct{}

var _ aggregate.Env = testEnv{}

var errNoCollections = errors.New("changestream test: no collections")

func (testEnv) Collection(string) (aggregate.Iterator, error) { return nil, errNoCollections }
func (testEnv) CollStats(bson.D) (bson.D, error)              { return nil, errNoCollections }
func (testEnv) Now() time.Time                                { return time.Unix(1_700_000_000, 0) }
