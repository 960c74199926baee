// Package opstats counts the commands the server runs: per command name
// (count, failures, a latency histogram), per namespace and kind (the top
// command), per class of operation (serverStatus opLatencies and
// globalLock.activeClients) and the errors returned (asserts). It is the one
// source for serverStatus, top and the Prometheus metrics, so they agree.
package opstats

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Class is how serverStatus.opLatencies groups operations.
type Class int

// The classes of operation.
const (
	Reads Class = iota
	Writes
	Commands
	numClasses
)

// LatencyBuckets are the upper bounds, in seconds, of the latency
// histogram's buckets: 50µs to 10s, about three per decade.
var LatencyBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
	0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// Histogram is a cumulative-ready latency histogram: Counts[i] counts
// observations at most LatencyBuckets[i] and above the bucket before it;
// the last element counts those above every bound.
type Histogram struct {
	Counts []uint64
	Sum    time.Duration
	Total  uint64
}

// Timed is a count and the time it took, for top.
type Timed struct {
	Count int64
	Time  time.Duration
}

// Kind is what top files an operation under.
type Kind int

// The kinds top reports.
const (
	KindQuery Kind = iota
	KindGetMore
	KindInsert
	KindUpdate
	KindRemove
	KindCommand
	numKinds
)

// Namespace is top's entry for one namespace.
type Namespace struct {
	Total, ReadLock, WriteLock Timed
	Kinds                      [numKinds]Timed
}

// Command is the record of one command name.
type Command struct {
	Failed  int64
	Latency Histogram
}

// Asserts are serverStatus.asserts.
type Asserts struct {
	Regular, Warning, Msg, User, Tripwire int64
}

// Stats is safe for concurrent use. Every command updates it, so the
// counters are atomics and the maps are sync.Maps, whose lookups of names
// already there take no lock: the read lock they had was two atomic
// writes to one word that every connection shares, each lookup. What can
// be summed from other counters when read (a class's, a namespace's
// total) is not counted again.
type Stats struct {
	commands   sync.Map // name → *commandStats
	namespaces sync.Map // "db.coll" → *nsStats

	active  [numClasses]atomic.Int64
	asserts struct{ regular, user atomic.Int64 }
}

// numLatencyBuckets is len(LatencyBuckets), for the counters' array.
const numLatencyBuckets = 17

type commandStats struct {
	failed  atomic.Int64
	nanos   atomic.Int64
	buckets [numLatencyBuckets + 1]atomic.Uint64
}

type timed struct{ count, nanos atomic.Int64 }

func (t *timed) add(d time.Duration) {
	t.count.Add(1)
	t.nanos.Add(int64(d))
}

func (t *timed) load() Timed {
	return Timed{Count: t.count.Load(), Time: time.Duration(t.nanos.Load())}
}

// nsStats has no total: every operation is under exactly one of
// readLock and writeLock, which sum to it.
type nsStats struct {
	readLock, writeLock timed
	kinds               [numKinds]timed
}

// New returns empty statistics.
func New() *Stats { return &Stats{} }

// ClassOf tells which class a command belongs to.
func ClassOf(name string) Class {
	switch name {
	case "find", "getMore", "count", "distinct", "aggregate":
		return Reads
	case "insert", "update", "delete", "findAndModify", "findandmodify", "bulkWrite":
		return Writes
	}
	return Commands
}

// WritesData tells whether a command changes data or the catalog: top
// files its time under writeLock, and it waits while the fsync lock is
// held.
func WritesData(name string) bool {
	if ClassOf(name) == Writes {
		return true
	}
	switch name {
	case "create", "drop", "dropDatabase", "createIndexes", "dropIndexes", "deleteIndexes",
		"collMod", "renameCollection", "applyOps":
		return true
	}
	return false
}

// KindOf tells which of top's kinds a command is.
func KindOf(name string) Kind {
	switch name {
	case "find":
		return KindQuery
	case "getMore":
		return KindGetMore
	case "insert":
		return KindInsert
	case "update":
		return KindUpdate
	case "delete":
		return KindRemove
	}
	return KindCommand
}

// Begin marks an operation of class c as running; the returned function
// marks it finished.
func (s *Stats) Begin(c Class) func() {
	s.active[c].Add(1)
	return func() { s.active[c].Add(-1) }
}

// Active is the number of operations of class c running now.
func (s *Stats) Active(c Class) int64 { return s.active[c].Load() }

// Record counts one finished command. ns is "db.coll", or empty for a
// command without a collection (top leaves those out). internal tells a
// server fault (InternalError) from an error the client caused.
func (s *Stats) Record(name, ns string, d time.Duration, failed, internal bool) {
	if failed {
		if internal {
			s.asserts.regular.Add(1)
		} else {
			s.asserts.user.Add(1)
		}
	}
	c := getOrAdd[commandStats](&s.commands, name)
	if failed {
		c.failed.Add(1)
	}
	c.buckets[sort.SearchFloat64s(LatencyBuckets, d.Seconds())].Add(1)
	c.nanos.Add(int64(d))
	if ns == "" || strings.HasSuffix(ns, ".$cmd") {
		return
	}
	n := getOrAdd[nsStats](&s.namespaces, ns)
	if WritesData(name) {
		n.writeLock.add(d)
	} else {
		n.readLock.add(d)
	}
	n.kinds[KindOf(name)].add(d)
}

// getOrAdd finds m[key], adding a zero entry the first time.
func getOrAdd[T any](m *sync.Map, key string) *T {
	if v, ok := m.Load(key); ok {
		return v.(*T)
	}
	v, _ := m.LoadOrStore(key, new(T))
	return v.(*T)
}

// Commands returns every command's record, by name.
func (s *Stats) Commands() map[string]Command {
	out := map[string]Command{}
	s.commands.Range(func(k, v any) bool {
		c := v.(*commandStats)
		h := Histogram{Counts: make([]uint64, len(c.buckets)), Sum: time.Duration(c.nanos.Load())}
		for i := range c.buckets {
			h.Counts[i] = c.buckets[i].Load()
			h.Total += h.Counts[i]
		}
		out[k.(string)] = Command{Failed: c.failed.Load(), Latency: h}
		return true
	})
	return out
}

// Namespaces returns top's entries, by namespace.
func (s *Stats) Namespaces() map[string]Namespace {
	out := map[string]Namespace{}
	s.namespaces.Range(func(k, v any) bool {
		n := v.(*nsStats)
		r, w := n.readLock.load(), n.writeLock.load()
		e := Namespace{Total: Timed{Count: r.Count + w.Count, Time: r.Time + w.Time}, ReadLock: r, WriteLock: w}
		for k := range n.kinds {
			e.Kinds[k] = n.kinds[k].load()
		}
		out[k.(string)] = e
		return true
	})
	return out
}

// Class returns the count and total time of class c: the sum of its
// commands' histograms.
func (s *Stats) Class(c Class) Timed {
	var t Timed
	s.commands.Range(func(k, v any) bool {
		if ClassOf(k.(string)) == c {
			cs := v.(*commandStats)
			for i := range cs.buckets {
				t.Count += int64(cs.buckets[i].Load())
			}
			t.Time += time.Duration(cs.nanos.Load())
		}
		return true
	})
	return t
}

// Asserts returns the error counters.
func (s *Stats) Asserts() Asserts {
	return Asserts{Regular: s.asserts.regular.Load(), User: s.asserts.user.Load()}
}
