package server

import (
	"net"
	"sync"
	"testing"
)

// TestConnValues checks SetValue's keys: each kept apart, replaced,
// removed by nil, and read while another goroutine changes them (run
// with -race).
func TestConnValues(t *testing.T) {
	client, srv := net.Pipe()
	defer client.Close()
	defer srv.Close()
	c := newConn(New(Config{Addr: "127.0.0.1:0", Logger: quietLogger()}, pingHandler{}), srv)
	if got := c.Value("a"); got != nil {
		t.Fatalf("unset key: %v", got)
	}
	c.SetValue("a", 1)
	c.SetValue("b", "two")
	c.SetValue("a", 3)
	if got, want := c.Value("a"), 3; got != want {
		t.Fatalf("a = %v, want %v", got, want)
	}
	if got, want := c.Value("b"), "two"; got != want {
		t.Fatalf("b = %v, want %v", got, want)
	}
	c.SetValue("a", nil)
	if got := c.Value("a"); got != nil {
		t.Fatalf("removed key: %v", got)
	}
	if got, want := c.Value("b"), "two"; got != want {
		t.Fatalf("b after removing a = %v, want %v", got, want)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 1000 {
			c.SetValue("n", i)
		}
	}()
	for range 1000 {
		if v := c.Value("n"); v != nil {
			if _, ok := v.(int); !ok {
				t.Fatalf("n holds %v", v)
			}
		}
		if got := c.Value("b"); got != "two" {
			t.Fatalf("b while n changes = %v", got)
		}
	}
	wg.Wait()
	if got, want := c.Value("n"), 999; got != want {
		t.Fatalf("n = %v, want %v", got, want)
	}
}
