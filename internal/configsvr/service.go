package configsvr

import (
	"context"
	"log/slog"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
)

// Runner runs a command on a host (a wireclient.Client).
type Runner interface {
	Run(ctx context.Context, host, db string, cmd bson.D) (bson.D, error)
}

// Options build a Service.
type Options struct {
	Store  *docstore.Store
	Client Runner
	Clock  clock.Clock
	Logger *slog.Logger
	// IsPrimary reports whether this member takes writes: only the
	// primary balances.
	IsPrimary func() bool
	// Self names this member in config.changelog.
	Self func() string
}

// Service is a config server member's migration work.
type Service struct {
	opts Options

	// commitMu makes placement commits one at a time, so that each reads
	// the versions the one before it wrote.
	commitMu sync.Mutex

	mu      sync.Mutex
	rounds  int64
	inRound bool
}

// New returns a config server's Service.
func New(opts Options) *Service {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Self == nil {
		opts.Self = func() string { return "config" }
	}
	return &Service{opts: opts}
}
