package server

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/wire"
)

// Draining is closed once the server starts shutting down: a request
// that waits by design (an awaitable hello) answers then.
func (c *Conn) Draining() <-chan struct{} { return c.srv.draining }

// streams reports whether a request asks for a stream of replies: an
// awaitable hello (topologyVersion and maxAwaitTimeMS) sent with the
// exhaustAllowed flag. Drivers then read replies flagged moreToCome, one
// per topology change or maxAwaitTimeMS, without asking again.
func streams(msg *wire.Message, cmd *Command) bool {
	if msg.OpCode != wire.OpMsg || msg.Flags&wire.FlagExhaustAllowed == 0 {
		return false
	}
	switch cmd.Name {
	case "hello", "isMaster", "ismaster":
	default:
		return false
	}
	_, tv := bsonutil.Field(cmd.Body, "topologyVersion")
	_, wait := bsonutil.Field(cmd.Body, "maxAwaitTimeMS")
	return tv && wait
}

// stream answers an exhaust hello until the reply is an error, the server
// shuts down or the client goes away. Each reply's topologyVersion becomes
// the next request's, so each waits for the next change.
func (c *Conn) stream(msg *wire.Message, cmd *Command) bool {
	responseTo := msg.Header.RequestID
	for {
		reply := c.call(cmd)
		tv, ok := bsonutil.Field(reply, "topologyVersion")
		if !ok || c.srv.shutdown.Load() {
			return c.send(msg.OpCode, responseTo, cmd.Name, reply)
		}
		id, err := c.wr.WriteMsgMoreToCome(responseTo, reply)
		if err != nil {
			c.srv.log.Info("write failed; closing", "conn", c.id, "remote", c.remote, "err", err)
			return false
		}
		responseTo = id
		cmd.Body = withField(cmd.Body, "topologyVersion", tv)
	}
}

func withField(d bson.D, key string, v any) bson.D {
	out := make(bson.D, 0, len(d))
	for _, e := range d {
		if e.Key == key {
			e.Value = v
		}
		out = append(out, e)
	}
	return out
}
