package server

import (
	"testing"
	"time"
)

// TestConnLimitKeepsDescriptors: the connection limit is at most 80% of
// the descriptor limit, as mongod's, whether defaulted or configured.
func TestConnLimitKeepsDescriptors(t *testing.T) {
	cases := []struct {
		requested int
		nofile    uint64
		want      int
	}{
		{DefaultMaxConns, 20000, 16000},
		{DefaultMaxConns, 1024, 819},
		{100, 20000, 100},
		{50000, 1000, 800},
		{DefaultMaxConns, 0, DefaultMaxConns}, // limit unknown
	}
	for _, c := range cases {
		if got := connLimit(c.requested, c.nofile, quietLogger()); got != c.want {
			t.Errorf("connLimit(%d, nofile %d) = %d, want %d", c.requested, c.nofile, got, c.want)
		}
	}
	if got := New(Config{}, newFakeHandler()).cfg.MaxConns; got >= int(descriptorLimit()) {
		t.Errorf("default limit %d is not below the descriptor limit %d", got, descriptorLimit())
	}
}

// TestIdleTimeoutClosesIdleConnections: with IdleTimeout set, a connection
// that sends nothing is closed; one that keeps talking is not.
func TestIdleTimeoutClosesIdleConnections(t *testing.T) {
	s := startServer(t, Config{IdleTimeout: time.Second}, newFakeHandler())
	idle, busy := dial(t, s), dial(t, s)
	for range 15 { // 1.5 s of requests 100 ms apart: never idle for a second
		wantOK(t, busy.run(ping()))
		time.Sleep(100 * time.Millisecond)
	}
	idle.expectClosed(2 * time.Second)
	wantOK(t, busy.run(ping()))
}
