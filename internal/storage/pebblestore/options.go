package pebblestore

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Tuning for many small documents, written and deleted at a high rate (TTL
// expiry). The reasoning is in docs/design/0002-storage-and-durability.md.
const (
	memTableSize                    = 16 << 20
	memTableStopThreshold           = 4  // memtables queued before writes stall
	l0CompactionThreshold           = 8  // L0 compacts at four sublevels: four flushes share one rewrite of the base level
	l0CompactionThresholdReplicated = 2  // a replica-set member's compacts at every flush: 4 and 8 measured worse for the set (0002)
	l0StopWritesThreshold           = 24 // absorb bursts (e.g. expiry sweeps) before stalling
	lBaseMaxBytes                   = 64 << 20
	bloomBitsPerKey                 = 10 // ~1% false positives for point lookups
)

func (s *Store) pebbleOptions(fs vfs.FS, cache *pebble.Cache, diskHealth bool) *pebble.Options {
	o := &pebble.Options{
		FS:     fs,
		Cache:  cache,
		Logger: pebbleLogger{log: s.logger, onFatal: s.fail, repeats: s.repeats},
		// Pin the on-disk format: a newer pebble must not silently ratchet
		// an existing store to a format older binaries cannot read.
		FormatMajorVersion:          pebble.FormatValueSeparation,
		MemTableSize:                memTableSize,
		MemTableStopWritesThreshold: memTableStopThreshold,
		L0CompactionThreshold:       s.l0Compact,
		L0StopWritesThreshold:       l0StopWritesThreshold,
		LBaseMaxBytes:               lBaseMaxBytes,
		CompactionConcurrencyRange: func() (int, int) {
			return 1, max(2, s.cpus/2)
		},
		// In memory nothing survives the process, so a WAL would only cost
		// memory and copying.
		DisableWAL: s.inMem,
	}
	o.Experimental.SpanPolicyFunc = splitAtTags
	el := s.eventListener()
	o.EventListener = &el
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
	}
	o.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionFastest })
	if diskHealth {
		o.WithFSDefaults() // pebble's disk-stall detection, reported as DiskSlow
	}
	return o
}

// eventListener logs the events an operator needs to see, and tells the
// pin loop of every new version; routine flush and compaction events are
// not logged.
func (s *Store) eventListener() pebble.EventListener {
	log := s.logger
	return pebble.EventListener{
		BackgroundError: func(err error) {
			s.repeats.Log(slog.LevelError, "background", "pebble background error", "err", err.Error())
		},
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			log.Error("pebble data corruption", "path", info.Path, "err", info.Details)
		},
		DiskSlow:        func(info pebble.DiskSlowInfo) { log.Warn("disk slow", "info", info.String()) },
		LowDiskSpace:    func(info pebble.LowDiskSpaceInfo) { log.Warn("low disk space", "info", info.String()) },
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) { s.stalls.Add(1); log.Warn("write stall", "reason", info.Reason) },
		WriteStallEnd:   func() { log.Info("write stall ended") },
		// Each of these ends with a new version installed (pin.go); all
		// but a flush may remove tables.
		FlushEnd:           func(pebble.FlushInfo) { s.versionInstalled(false) },
		CompactionEnd:      func(pebble.CompactionInfo) { s.versionInstalled(true) },
		TableIngested:      func(pebble.TableIngestInfo) { s.versionInstalled(true) },
		DownloadEnd:        func(pebble.DownloadInfo) { s.versionInstalled(true) },
		BlobFileRewriteEnd: func(pebble.BlobFileRewriteInfo) { s.versionInstalled(true) },
	}
}

// pebbleLogger adapts slog to pebble's Logger.
type pebbleLogger struct {
	log     *slog.Logger
	onFatal func(error)
	repeats *throttledLog // errors that repeat are logged once per logEvery
}

// Infof carries pebble's routine messages (WAL recycling, table stats
// collection, ...): debug level, so that an operator's log at info shows
// what the server does, not the engine's housekeeping.
func (l pebbleLogger) Infof(format string, args ...any) {
	if !l.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	l.log.Debug(fmt.Sprintf(format, args...))
}

// Errorf logs without stack traces, and a message that keeps repeating
// (its format is the kind) once per logEvery with a count.
func (l pebbleLogger) Errorf(format string, args ...any) {
	l.repeats.Log(slog.LevelError, format, fmt.Sprintf(withoutStacks(format), args...))
}

// Fatalf is how pebble reports failures it cannot continue from (a failed
// WAL sync, a failed MANIFEST write), expecting the process to exit. A
// database server can still serve reads, so instead the store stops taking
// writes; reopening recovers. The cause is kept for errors.Is.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	err := fmt.Errorf(format, args...)
	for _, a := range args {
		if cause, ok := a.(error); ok {
			err = fmt.Errorf("%s: %w", err, cause)
			break
		}
	}
	l.onFatal(fmt.Errorf("pebble: %w", err))
}

// splitAtTags ends a flush's or compaction's output table where a key's
// first byte (its tag: documents, index entries, the change log, the raft
// log) changes. The logs, appended in key order, then get tables of their
// own, which move down the levels instead of being rewritten with the
// documents' (docs/design/0002, "Pebble tuning").
func splitAtTags(start []byte) (pebble.SpanPolicy, []byte, error) {
	switch {
	case len(start) == 0:
		return pebble.SpanPolicy{}, []byte{0}, nil
	case start[0] == 0xff:
		return pebble.SpanPolicy{}, nil, nil // to the end of the key space
	}
	return pebble.SpanPolicy{}, []byte{start[0] + 1}, nil
}
