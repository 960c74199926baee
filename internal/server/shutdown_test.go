package server

import (
	"context"
	"testing"
	"time"
)

// A client that stalls halfway through a request must not hold Shutdown
// for MessageTimeout: the request has had no effect, so it is dropped.
func TestShutdownDropsHalfReadRequest(t *testing.T) {
	s := New(Config{Addr: "127.0.0.1:0", Logger: quietLogger(), MessageTimeout: time.Minute}, newFakeHandler())
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve() }()
	idle, half := dial(t, s), dial(t, s)
	wantOK(t, idle.run(ping()))
	req := half.msg(0, ping())
	half.send(req[:len(req)/2])
	eventually(t, "the half request to be read", func() bool { return s.Stats().Active == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Shutdown took %v", d)
	}
	half.expectClosed(time.Second)
	idle.expectClosed(time.Second)
}
