package commands

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/server"
)

// BenchmarkRequestBookkeeping is what Handle spends on a request outside
// its command: the session workload's find, update and delete, with lsid,
// maxTimeMS and $db as the driver sends them, on a collection that does
// not exist, so that the command itself does next to nothing and what is
// left is the session touch, currentOp, the statistics, the counters and
// the clock readings. "parallel" runs it from two goroutines, each a
// connection with a session of its own, as two cores serve two clients;
// "ping" is a ping with the same fields, a command that does nothing.
// cpu-ns/op is the process's CPU time (getrusage) per request, the GC's
// included: on a machine that other work shares, it moves less than
// ns/op, which counts the time the benchmark waits for a core.
//
//	go test ./internal/commands -run XXX -bench RequestBookkeeping -benchtime 200000x -benchmem
func BenchmarkRequestBookkeeping(b *testing.B) {
	h, _ := newClockedHandler(b, nil)
	bodies := func(lsid bson.D) []bson.D {
		generic := bson.D{{Key: "lsid", Value: lsid}, {Key: "maxTimeMS", Value: int64(benchMaxTimeMS)}, {Key: "$db", Value: "test"}}
		q := bson.D{{Key: "token", Value: sessionToken(1)}}
		return []bson.D{
			append(bson.D{{Key: "find", Value: "none"}, {Key: "filter", Value: q}, {Key: "limit", Value: int64(1)}, {Key: "singleBatch", Value: true}}, generic...),
			append(bson.D{{Key: "update", Value: "none"}, {Key: "ordered", Value: true}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: q},
				{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "accessTime", Value: bson.DateTime(0)}}}}}}}}}, generic...),
			append(bson.D{{Key: "delete", Value: "none"}, {Key: "ordered", Value: true}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: q}, {Key: "limit", Value: int32(1)}}}}}, generic...),
		}
	}
	run := func(b *testing.B, c *server.Conn, body bson.D) {
		reply := h.Handle(context.Background(), c, &server.Command{DB: "test", Name: body[0].Key, Body: body})
		if ok, _ := bsonutil.Field(reply, "ok"); ok != 1.0 {
			b.Fatalf("%s: %v", body[0].Key, reply)
		}
	}
	b.Run("serial", func(b *testing.B) {
		c, all := server.NewDetachedConn(1, "127.0.0.1:50000"), bodies(benchLsid())
		b.ReportAllocs()
		cpu := processCPU(b)
		for i := 0; i < b.N; i++ {
			run(b, c, all[i%len(all)])
		}
		b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
	})
	b.Run("ping", func(b *testing.B) {
		c := server.NewDetachedConn(1, "127.0.0.1:50000")
		ping := append(bson.D{{Key: "ping", Value: int32(1)}}, bodies(benchLsid())[0][4:]...)
		b.ReportAllocs()
		cpu := processCPU(b)
		for i := 0; i < b.N; i++ {
			run(b, c, ping)
		}
		b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
	})
	b.Run("parallel", func(b *testing.B) {
		var conns atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(1)
		cpu := processCPU(b)
		b.RunParallel(func(pb *testing.PB) {
			n := conns.Add(1)
			lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: append(make([]byte, 15), byte(n))}}}
			c, all := server.NewDetachedConn(100+n, "127.0.0.1:50000"), bodies(lsid)
			for i := 0; pb.Next(); i++ {
				run(b, c, all[i%len(all)])
			}
		})
		b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
	})
}

// processCPU is the CPU time the process has used, user and system, in
// nanoseconds.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
