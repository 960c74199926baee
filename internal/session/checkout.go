package session

import (
	"context"
	"sync"
)

// Checkouts serializes the retryable writes of each session on a member,
// as mongod checks a session out for one operation at a time. A retry
// that arrives while its first attempt still runs (the router that sent
// the first died with it, and a migration's critical section held it)
// waits for that attempt and then finds its record, instead of running
// the statement again beside it. The zero value is ready.
type Checkouts struct {
	mu   sync.Mutex
	held map[string]*checkout
}

// checkout is one session's: closed is closed when its holder leaves.
type checkout struct{ closed chan struct{} }

// CheckOut waits until no other operation holds the session lsid, or ctx
// ends, and returns the function that releases it.
func (c *Checkouts) CheckOut(ctx context.Context, lsid []byte) (release func(), err error) {
	for {
		c.mu.Lock()
		if c.held == nil {
			c.held = map[string]*checkout{}
		}
		cur, busy := c.held[string(lsid)]
		if !busy {
			mine := &checkout{closed: make(chan struct{})}
			c.held[string(lsid)] = mine
			c.mu.Unlock()
			return func() { c.release(string(lsid), mine) }, nil
		}
		c.mu.Unlock()
		select {
		case <-cur.closed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (c *Checkouts) release(lsid string, mine *checkout) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[lsid] == mine {
		delete(c.held, lsid)
	}
	close(mine.closed)
}

// Held is how many sessions are checked out.
func (c *Checkouts) Held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.held)
}
