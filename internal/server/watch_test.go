package server

import (
	"errors"
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

// TestWatchCancelsWhenClientLeaves: a command that outlives watchAfter
// ends with ErrClientDisconnected when its client closes the connection,
// whatever the connection did before it. The watch's timer is set once and
// put off while commands follow each other, so each way it can be found
// when the long command begins has a row: never set, set for a command
// that has ended (short commands back to back for longer than watchAfter),
// and stopped (the connection idle for longer than watchAfter).
func TestWatchCancelsWhenClientLeaves(t *testing.T) {
	short := func(c *rawClient) {
		c.send(c.msg(0, bson.D{{Key: "nap", Value: int64(100)}, {Key: "$db", Value: "admin"}}))
		if _, err := c.readFrame(2 * time.Second); err != nil {
			t.Fatalf("short command: %v", err)
		}
	}
	cases := []struct {
		name   string
		before func(c *rawClient)
	}{
		{"first command", func(*rawClient) {}},
		{"after back-to-back commands", func(c *rawClient) {
			for start := time.Now(); time.Since(start) < 3*watchAfter; {
				short(c)
			}
		}},
		{"after an idle connection", func(c *rawClient) {
			short(c)
			time.Sleep(3 * watchAfter)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHandler()
			s := startServer(t, Config{}, h)
			c := dial(t, s)
			tc.before(c)
			c.send(c.msg(0, bson.D{{Key: "block", Value: 1}, {Key: "$db", Value: "admin"}}))
			<-h.started
			c.nc.Close()
			select {
			case cause := <-h.ended:
				if !errors.Is(cause, ErrClientDisconnected) {
					t.Fatalf("command ended with %v, want ErrClientDisconnected", cause)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the command was not cancelled after its client left")
			}
		})
	}
}
