package server

// NewDetachedConn returns a Conn with no network connection behind it, for
// running commands in process (tests and the command-layer fuzzer): the
// handler's reply is returned to the caller and never sent.
func NewDetachedConn(id int64, remote string) *Conn {
	c := &Conn{srv: &Server{}, id: id, desc: connDesc(id), remote: remote, local: "127.0.0.1:27017"}
	c.compressor.Store(-1)
	return c
}
