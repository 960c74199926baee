package oplog

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/storage"
)

// chunk is how many writes a cursor reads from the log at a time: a
// read holds its iterator only while it fills one chunk.
const chunk = 256

// Cursor reads the oplog's entries from a change log, oldest first or
// newest first, a chunk at a time, so that a find with a limit reads no
// more of a large log than it returns.
type Cursor struct {
	log     storage.Reader
	reverse bool
	// from is where the next chunk starts: after it going forward,
	// before it going back (zero: the log's start, or its end).
	from    changestream.Timestamp
	pending []bson.D
	done    bool
}

// NewCursor reads log's entries oldest first, from the first write after
// the timestamp after (zero: from the log's start).
func NewCursor(log storage.Reader, after changestream.Timestamp) *Cursor {
	return &Cursor{log: log, from: after}
}

// NewReverseCursor reads log's entries newest first.
func NewReverseCursor(log storage.Reader) *Cursor {
	return &Cursor{log: log, reverse: true}
}

// Next returns the next entry; ok is false at the end.
func (c *Cursor) Next() (bson.D, bool, error) {
	for len(c.pending) == 0 {
		if c.done {
			return nil, false, nil
		}
		if err := c.fill(); err != nil {
			return nil, false, err
		}
	}
	d := c.pending[0]
	c.pending = c.pending[1:]
	return d, true, nil
}

// Close ends the cursor; it holds no iterator between chunks.
func (c *Cursor) Close() error { return nil }

func (c *Cursor) fill() error {
	writes := 0
	add := func(write []changestream.Record) (bool, error) {
		c.from = write[0].Pos.TS
		writes++
		e, ok, err := Entry(write)
		if err != nil || !ok {
			return err == nil, err
		}
		c.pending = append(c.pending, e)
		return writes < chunk, nil
	}
	var err error
	if c.reverse {
		err = changestream.ScanBack(c.log, c.from, add)
	} else {
		err = scanWrites(c.log, c.from, add)
	}
	c.done = err == nil && writes < chunk
	return err
}

// scanWrites calls fn with each write after the timestamp after, its
// records together.
func scanWrites(log storage.Reader, after changestream.Timestamp, fn func([]changestream.Record) (bool, error)) error {
	var write []changestream.Record
	var stopped bool
	err := changestream.Scan(log, changestream.HighWater(after), func(rec changestream.Record) (bool, error) {
		if len(write) > 0 && rec.Pos.TS != write[0].Pos.TS {
			more, err := fn(write)
			if err != nil || !more {
				stopped = true
				return false, err
			}
			write = nil
		}
		write = append(write, rec)
		return true, nil
	})
	if err != nil || stopped || len(write) == 0 {
		return err
	}
	_, err = fn(write)
	return err
}

// statsScan is how many writes Stats counts one by one before it
// estimates the rest.
const statsScan = 100_000

// Stats is the oplog's entries and the bytes of their records: counted
// for a log of up to statsScan writes; for a longer one (a day of a busy
// set's writes is hundreds of millions) the first statsScan writes'
// counts scaled by the log's bytes on disk against theirs, as an engine
// that can estimate them tells (records still in memory are not on disk
// yet, so the newest few are left out). Without an estimate the counts
// stop at statsScan.
func Stats(log storage.Reader) (entries, size int64, err error) {
	return stats(log, statsScan)
}

func stats(log storage.Reader, scan int64) (entries, size int64, err error) {
	entries, size, next, complete, err := changestream.WriteStats(log, scan)
	if err != nil || complete {
		return entries, size, err
	}
	est, ok := log.(storage.SizeEstimator)
	if !ok {
		return entries, size, nil
	}
	total, err := est.EstimateDiskUsage(changestream.LogStart, changestream.LogEnd)
	if err != nil {
		return 0, 0, err
	}
	counted, err := est.EstimateDiskUsage(changestream.LogStart, next)
	if err != nil || counted == 0 || total <= counted {
		return entries, size, err
	}
	scale := float64(total) / float64(counted)
	return int64(float64(entries) * scale), int64(float64(size) * scale), nil
}

// DiskSize is the engine's estimate of the log's bytes on disk (0 where
// it cannot say): cheap, for listCollections.
func DiskSize(log storage.Reader) int64 {
	est, ok := log.(storage.SizeEstimator)
	if !ok {
		return 0
	}
	n, err := est.EstimateDiskUsage(changestream.LogStart, changestream.LogEnd)
	if err != nil {
		return 0
	}
	return int64(n)
}
