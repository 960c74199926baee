package server

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestWatchStopNeverStrandsReply: a command that ends just as the watch for
// its client leaving starts still gets its reply at once. When the watch's
// goroutine cleared the read deadline after the command's end had set the
// wake-up one, the connection waited for the client's next request before
// sending this reply, and the client, waiting for the reply, timed out.
// The hook holds the watch just after it started until the command has
// ended, the order that stranded the reply.
func TestWatchStopNeverStrandsReply(t *testing.T) {
	const napped = 20 * time.Millisecond // the command ends this long after the watch starts
	s := startServer(t, Config{watchStarted: func() { time.Sleep(3 * napped) }}, newFakeHandler())
	c := dial(t, s)
	for i := range 3 {
		start := time.Now()
		c.send(c.msg(0, bson.D{{Key: "nap", Value: (watchAfter + napped).Microseconds()}, {Key: "$db", Value: "admin"}}))
		if _, err := c.readFrame(2 * time.Second); err != nil {
			t.Fatalf("command %d: no reply after %v: %v", i, time.Since(start), err)
		}
	}
}
