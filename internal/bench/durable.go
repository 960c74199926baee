package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// DurableResult is a run of single-document inserts from Clients clients,
// with or without j: true.
type DurableResult struct {
	Clients int  `json:"clients"`
	Journal bool `json:"journal"`
	WindowResult
	Errors   int64  `json:"errors"`
	FirstErr string `json:"first_error,omitempty"`
}

// runDurableJob has j.Clients workers insert session documents one at a
// time into a collection of their own for j.Duration after j.Warmup, with
// writeConcern {j: true} if j.Journal and the server's default (w: 1, no
// journal wait) otherwise.
func runDurableJob(ctx context.Context, j Job) (*DurableResult, error) {
	c, err := dialJob(ctx, j)
	if err != nil {
		return nil, err
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	copts := options.Collection()
	switch {
	case j.Majority:
		copts.SetWriteConcern(writeconcern.Majority())
	case j.Journal:
		copts.SetWriteConcern(writeconcern.Journaled())
	}
	coll := c.Database(benchDB).Collection(fmt.Sprintf("durable_%d", j.RunID), copts)
	start := time.Now()
	win := span{start.Add(j.Warmup), start.Add(j.Warmup + j.Duration)}
	recs := make([]*recorder, j.Clients)
	errs := make([]error, j.Clients)
	failures := make([]int64, j.Clients)
	var wg sync.WaitGroup
	for w := range j.Clients {
		recs[w] = newRecorder(win)
		wg.Go(func() {
			for seq := uint64(0); ctx.Err() == nil; seq++ {
				t0 := time.Now()
				if !t0.Before(win.to) {
					return
				}
				n := loginBase(j.RunID) + uint64(w) + uint64(j.Clients)*seq
				_, err := coll.InsertOne(ctx, sessionDoc{Token: token(n), UserID: userID(n), AccessTime: t0})
				t1 := time.Now()
				if err != nil {
					failures[w]++
					if errs[w] == nil {
						errs[w] = err
					}
					continue
				}
				recs[w].add(t1, t1.Sub(t0))
			}
		})
	}
	wg.Wait()
	res := &DurableResult{Clients: j.Clients, Journal: j.Journal}
	all := newRecorder(win)
	for w := range recs {
		all.merge(recs[w])
		res.Errors += failures[w]
		if errs[w] != nil && res.FirstErr == "" {
			res.FirstErr = errs[w].Error()
		}
	}
	res.WindowResult = all.result(0)
	if res.Latency.Count == 0 {
		return nil, fmt.Errorf("no insert succeeded: %s", res.FirstErr)
	}
	return res, nil
}

// FsyncResult is the raw rate of small write+fsync pairs on one disk.
type FsyncResult struct {
	Dir         string  `json:"dir"`
	FsyncPerSec float64 `json:"fsync_per_sec"`
	Latency     Summary `json:"latency"`
}

// fsyncFileSize is the preallocated region the fsync loop overwrites, so
// that (as in a recycled write-ahead log) the file never grows.
const (
	fsyncFileSize  = 1 << 20
	fsyncWriteSize = 512
)

// runFsyncJob writes 512 bytes and fsyncs, in a loop for j.Duration, to a
// preallocated file in j.Dir.
func runFsyncJob(ctx context.Context, j Job) (*FsyncResult, error) {
	f, err := os.CreateTemp(j.Dir, "fsync-probe-*")
	if err != nil {
		return nil, fmt.Errorf("fsync probe: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(make([]byte, fsyncFileSize)); err != nil {
		return nil, fmt.Errorf("fsync probe: preallocate: %w", err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("fsync probe: %w", err)
	}
	buf := make([]byte, fsyncWriteSize)
	var h Histogram
	start := time.Now()
	end := start.Add(j.Duration)
	for off := int64(0); ctx.Err() == nil && time.Now().Before(end); off = (off + fsyncWriteSize) % fsyncFileSize {
		t0 := time.Now()
		buf[0]++
		if _, err := f.WriteAt(buf, off); err != nil {
			return nil, fmt.Errorf("fsync probe: write: %w", err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("fsync probe: fsync: %w", err)
		}
		h.Add(time.Since(t0))
	}
	secs := time.Since(start).Seconds()
	dir, _ := filepath.Abs(j.Dir)
	return &FsyncResult{Dir: dir, FsyncPerSec: float64(h.Count()) / secs, Latency: h.Summarize()}, nil
}
