package integration

import (
	"log/slog"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore/faultfs"
)

// TestHostileStartOnFullDisk: a server started on a full disk comes up,
// serves reads and refuses writes with 14031, and takes writes once space
// returns, without a storm of background errors meanwhile.
func TestHostileStartOnFullDisk(t *testing.T) {
	dir := t.TempDir()
	full := &faultfs.DiskFull{}
	fs := errorfs.Wrap(vfs.Default, full)
	first := startServer(t, app.Config{DataDir: dir, FS: fs})
	acked := map[int32]bool{}
	c := connect(t, first)
	insertAcked(t, c.Database("test").Collection("docs", options.Collection().SetWriteConcern(writeconcern.Journaled())), acked, 0, 50)
	_ = c.Disconnect(ctxT(t))
	first.stop(t)

	full.Set(true)
	logs := &logRecorder{}
	srv := startServer(t, app.Config{DataDir: dir, FS: fs, RecoverInterval: 20 * time.Millisecond, Logger: slog.New(logs)})
	db := connect(t, srv).Database("test")
	coll := db.Collection("docs", options.Collection().SetWriteConcern(writeconcern.Journaled()))
	readsWork(t, srv, coll, acked)
	writesRefused(t, db, coll, 1000)
	failsBefore := full.Fails()
	time.Sleep(500 * time.Millisecond)
	perSecond := float64(full.Fails()-failsBefore) / 0.5
	t.Logf("failed disk writes while idle on a full disk: %.0f/s", perSecond)
	if perSecond > 200 {
		t.Errorf("%.0f failed disk writes a second while idle: a retry loop", perSecond)
	}
	full.Set(false)
	waitForWrites(t, coll, acked)
	readsWork(t, srv, coll, acked)
}
