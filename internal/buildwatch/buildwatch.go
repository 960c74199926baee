// Package buildwatch follows the index builds that createIndexes commands
// start, for the server: it shows each in currentOp beside the command
// that waits for it, with its progress, as mongod shows its index
// builder, and holds it after each batch while mongod's fail point
// hangIndexBuildDuringCollectionScanPhaseAfterInsertion is on.
package buildwatch

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/activity"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/failpoint"
)

// scanning is the step currentOp names while a build reads the documents.
const scanning = "Index Build: scanning collection"

// Watcher follows a server's builds.
type Watcher struct {
	ops    *activity.Registry
	points *failpoint.Registry // nil without test commands
	// builders numbers the builders currentOp shows.
	builders atomic.Int64
}

// New returns a Watcher that shows builds in ops and holds them at
// points' fail point (points nil: never).
func New(ops *activity.Registry, points *failpoint.Registry) *Watcher {
	return &Watcher{ops: ops, points: points}
}

// Build follows the build of a createIndexes on collection coll of ns,
// running as operation op under ctx. The command calls End when the build
// returns.
type Build struct {
	w       *Watcher
	ctx     context.Context
	op      int64
	ns      string
	coll    string
	builder int64
}

// Watch starts following a createIndexes command's build.
func (w *Watcher) Watch(ctx context.Context, op int64, ns, coll string) *Build {
	return &Build{w: w, ctx: ctx, op: op, ns: ns, coll: coll}
}

// Hooks are what the store calls as the build goes.
func (b *Build) Hooks() docstore.BuildWatch {
	return docstore.BuildWatch{Started: b.started, AfterBatch: b.pause}
}

// End removes the builder from currentOp.
func (b *Build) End() {
	if b.builder != 0 {
		b.w.ops.End(b.builder)
	}
}

// started shows the build as an operation of its own, which killOp stops
// as it stops the command.
func (b *Build) started(build docstore.IndexBuild) {
	specs := bson.A{}
	for _, spec := range build.Specs() {
		specs = append(specs, spec)
	}
	w, op := b.w, b.op
	b.builder = w.ops.BeginCancelable(activity.Op{
		Desc: fmt.Sprintf("IndexBuildsCoordinatorMongod-%d", w.builders.Add(1)-1), Kind: "command", NS: b.ns,
		Command: bson.D{{Key: "createIndexes", Value: b.coll}, {Key: "indexes", Value: specs}},
		Progress: func() activity.Progress {
			done, total := build.Progress()
			return activity.Progress{Msg: scanning, Done: done, Total: total}
		},
	}, func(error) { w.ops.Kill(op) })
}

// pause holds the build while the fail point is on. The waits are real
// time: they wait for a test's next command, not for a date.
func (b *Build) pause() {
	points := b.w.points
	if points == nil {
		return
	}
	p := points.Point(failpoint.IndexBuildHangAfterInsertion)
	if _, on := p.Evaluate(func(bson.D) bool { return true }); !on {
		return
	}
	for points.On(failpoint.IndexBuildHangAfterInsertion) {
		select {
		case <-b.ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
