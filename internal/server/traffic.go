package server

import (
	"io"
	"sync/atomic"
)

// traffic counts the bytes and requests that cross the server's sockets.
type traffic struct {
	in, out, requests atomic.Int64
}

// countingReader adds what it reads to a counter.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
