package opstats

import (
	"testing"
	"time"
)

func TestRecordFilesByCommandNamespaceAndClass(t *testing.T) {
	s := New()
	s.Record("find", "db.c", 300*time.Microsecond, false, false)
	s.Record("insert", "db.c", 2*time.Millisecond, false, false)
	s.Record("createIndexes", "db.c", time.Millisecond, true, false)
	s.Record("ping", "admin.$cmd", 20*time.Second, true, true)

	cmds := s.Commands()
	if h := cmds["find"].Latency; h.Total != 1 || h.Counts[3] != 1 || h.Sum != 300*time.Microsecond {
		t.Fatalf("find histogram %+v: 300µs falls in the (250µs, 500µs] bucket", h)
	}
	if h := cmds["ping"].Latency; h.Counts[len(LatencyBuckets)] != 1 {
		t.Fatalf("20s is above every bound: %+v", h)
	}
	ns := s.Namespaces()
	if len(ns) != 1 {
		t.Fatalf("commands without a collection stay out of top: %v", ns)
	}
	c := ns["db.c"]
	if c.Total.Count != 3 || c.ReadLock.Count != 1 || c.WriteLock.Count != 2 || c.Kinds[KindInsert].Time != 2*time.Millisecond {
		t.Fatalf("top entry %+v", c)
	}
	if r, w := s.Class(Reads), s.Class(Writes); r.Count != 1 || w.Count != 1 || s.Class(Commands).Count != 2 {
		t.Fatalf("classes: reads %+v writes %+v", r, w)
	}
	if a := s.Asserts(); a.User != 1 || a.Regular != 1 {
		t.Fatalf("asserts %+v", a)
	}
	done := s.Begin(Writes)
	if s.Active(Writes) != 1 {
		t.Fatal("active writes")
	}
	done()
	if s.Active(Writes) != 0 {
		t.Fatal("finished")
	}
}

func TestBucketArrayFitsTheBounds(t *testing.T) {
	if len(LatencyBuckets) != numLatencyBuckets {
		t.Fatalf("numLatencyBuckets %d, LatencyBuckets has %d", numLatencyBuckets, len(LatencyBuckets))
	}
}

// BenchmarkRecord is the bookkeeping every command does at its end, from
// two goroutines as on a server with two cores and two connections.
func BenchmarkRecord(b *testing.B) {
	s := New()
	b.ReportAllocs()
	b.SetParallelism(1)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Record("update", "app.sessions", 40*time.Microsecond, false, false)
		}
	})
}
