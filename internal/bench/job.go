package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Targets a job can drive.
const (
	targetMongo = "mongo" // Mayfly or the null server, through the Go driver
	targetRedis = "redis" // redis-server, through go-redis
)

// Kinds of client job.
const (
	jobLoad     = "load"
	jobSessions = "sessions"
	jobDurable  = "durable"
	jobFsync    = "fsync"
	jobExpiry   = "expiry"
	jobScans    = "scans"
	// The migration phase's jobs (migration_jobs.go).
	jobMoveChunk = "move-chunk"
	jobMoving    = "moving"
	jobAddShard  = "add-shard"
)

// Job is one piece of client-side work. The parent encodes it as JSON on
// the standard input of a child (this binary with -role client, pinned or
// not), which answers with a JobResult on its standard output.
type Job struct {
	Kind      string `json:"kind"`
	Target    string `json:"target,omitempty"`
	Addr      string `json:"addr,omitempty"`
	ServerPID int    `json:"server_pid,omitempty"`
	// BehindPID is the process a router passes the work on to (its one
	// shard), whose CPU is measured beside the server's.
	BehindPID int            `json:"behind_pid,omitempty"`
	Clients   int            `json:"clients,omitempty"`
	Count     int            `json:"count,omitempty"`  // sessions to load, or already loaded
	RunID     int            `json:"run_id,omitempty"` // keeps runs' new sessions apart
	Warmup    time.Duration  `json:"warmup,omitempty"`
	Duration  time.Duration  `json:"duration,omitempty"`
	Journal   bool           `json:"journal,omitempty"`  // durable: j: true
	URI       string         `json:"uri,omitempty"`      // a replica set's seed list, instead of Addr
	Majority  bool           `json:"majority,omitempty"` // durable: w: "majority"
	Dir       string         `json:"dir,omitempty"`      // fsync: where to write
	Storm     *StormSpec     `json:"storm,omitempty"`
	Streams   int            `json:"streams,omitempty"` // sessions: change streams open on the collection
	Migration *MigrationSpec `json:"migration,omitempty"`
}

// JobResult holds the result of whichever kind of job ran.
type JobResult struct {
	Load     *LoadResult     `json:"load,omitempty"`
	Sessions *SessionsResult `json:"sessions,omitempty"`
	Durable  *DurableResult  `json:"durable,omitempty"`
	Fsync    *FsyncResult    `json:"fsync,omitempty"`
	Expiry   *ExpiryResult   `json:"expiry,omitempty"`
	Scans    *WindowResult   `json:"scans,omitempty"`
	Move     *MoveResult     `json:"move,omitempty"`
	Moving   *MovingResult   `json:"moving,omitempty"`
	AddShard *AddShardResult `json:"add_shard,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// jobTimeout bounds a job: its own durations plus generous room for
// connecting, loading and draining.
func jobTimeout(j Job) time.Duration {
	d := j.Warmup + j.Duration + 2*time.Minute
	if j.Storm != nil {
		d += j.Storm.Window + j.Storm.Baseline + j.Storm.MaxDrain + 5*time.Minute
	}
	return d + time.Duration(j.Count/2000)*time.Second
}

// RunJob runs one client job in this process.
func RunJob(ctx context.Context, j Job) (*JobResult, error) {
	ctx, cancel := context.WithTimeout(ctx, jobTimeout(j))
	defer cancel()
	var (
		res JobResult
		err error
	)
	switch j.Kind {
	case jobLoad:
		res.Load, err = runLoadJob(ctx, j)
	case jobSessions:
		res.Sessions, err = runSessionsJob(ctx, j)
	case jobDurable:
		res.Durable, err = runDurableJob(ctx, j)
	case jobFsync:
		res.Fsync, err = runFsyncJob(ctx, j)
	case jobExpiry:
		res.Expiry, err = runExpiryJob(ctx, j)
	case jobScans:
		res.Scans, err = runScansJob(ctx, j)
	case jobMoveChunk:
		res.Move, err = runMoveJob(ctx, j)
	case jobMoving:
		res.Moving, err = runMovingJob(ctx, j)
	case jobAddShard:
		res.AddShard, err = runAddShardJob(ctx, j)
	default:
		err = fmt.Errorf("unknown job kind %q", j.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("%s job: %w", j.Kind, err)
	}
	return &res, nil
}

// ClientMain is the client child: it reads a Job from in, runs it and
// writes the JobResult (or the error inside one) to out.
func ClientMain(ctx context.Context, in io.Reader, out io.Writer) error {
	var j Job
	if err := json.NewDecoder(in).Decode(&j); err != nil {
		return fmt.Errorf("client: read job: %w", err)
	}
	res, err := RunJob(ctx, j)
	if err != nil {
		res = &JobResult{Error: err.Error()}
	}
	if encErr := json.NewEncoder(out).Encode(res); encErr != nil {
		return fmt.Errorf("client: write result: %w", encErr)
	}
	return err
}
