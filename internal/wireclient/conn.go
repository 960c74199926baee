package wireclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/wire"
)

// conn is one connection, used by one caller at a time.
type conn struct {
	host   string
	nc     net.Conn
	reader *wire.Reader
	out    []byte
	// body and encoded are the command being sent, with $db, and its
	// BSON: kept between exchanges so that sending allocates nothing.
	body      bson.D
	encoded   []byte
	requestID int32
	lastUsed  time.Time
}

// dial connects, shakes hands over TLS if configured, and logs in, all
// within DialTimeout (and ctx).
func dial(ctx context.Context, host string, opts Options) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	defer cancel()
	tlsCfg := opts.TLS
	if tlsCfg != nil && tlsCfg.ServerName == "" {
		tlsCfg = tlsCfg.Clone()
		tlsCfg.ServerName, _, _ = net.SplitHostPort(host)
	}
	nc, _, err := auth.Dial(ctx, host, tlsCfg, opts.Credential)
	if err != nil {
		var cmdErr *auth.CommandError
		if errors.As(err, &cmdErr) {
			return nil, fmt.Errorf("wireclient: authenticate to %s as %s: %w", host, opts.Credential, err)
		}
		return nil, &NetworkError{Host: host, Err: err}
	}
	return &conn{host: host, nc: nc, reader: wire.NewReader(bufio.NewReader(nc), nil)}, nil
}

// roundTrip sends one command and reads its reply. If ctx ends first the
// connection is closed, which also unblocks the read; the connection is
// then useless and the caller discards it.
func (c *conn) roundTrip(ctx context.Context, db string, cmd bson.D) (bson.D, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.nc.Close() })
	reply, err := c.exchange(ctx, db, cmd)
	if !stop() {
		return nil, fmt.Errorf("wireclient: %s: %w", c.host, context.Cause(ctx))
	}
	return reply, err
}

func (c *conn) exchange(ctx context.Context, db string, cmd bson.D) (bson.D, error) {
	deadline, _ := ctx.Deadline() // zero: none
	if err := c.nc.SetDeadline(deadline); err != nil {
		return nil, &NetworkError{Host: c.host, Err: err}
	}
	raw, err := c.encode(db, cmd)
	if err != nil {
		return nil, err
	}
	c.requestID++
	c.out = wire.AppendMsg(c.out[:0], c.requestID, 0, 0, raw)
	if _, err := c.nc.Write(c.out); err != nil {
		return nil, &NetworkError{Host: c.host, Err: err}
	}
	return c.readReply()
}

// encode is cmd with $db as BSON, in the connection's buffers.
func (c *conn) encode(db string, cmd bson.D) ([]byte, error) {
	c.body = append(append(c.body[:0], cmd...), bson.E{Key: "$db", Value: db})
	defer clear(c.body) // holds no reference to the caller's values
	raw, ok := bsonutil.AppendD(c.encoded[:0], c.body)
	if ok {
		c.encoded = raw
		return raw, nil
	}
	raw, err := bson.Marshal(c.body) // what AppendD leaves to the driver
	if err != nil {
		return nil, fmt.Errorf("wireclient: encode command: %w", err)
	}
	return raw, nil
}

func (c *conn) readReply() (bson.D, error) {
	msg, err := c.reader.ReadMessage()
	if err != nil {
		return nil, &NetworkError{Host: c.host, Err: err}
	}
	if msg.Header.ResponseTo != c.requestID {
		return nil, &NetworkError{Host: c.host,
			Err: fmt.Errorf("reply to request %d, expected %d", msg.Header.ResponseTo, c.requestID)}
	}
	doc, err := msg.Command()
	if err != nil {
		return nil, &NetworkError{Host: c.host, Err: err}
	}
	return doc, nil
}

// keptBuffer is the largest send buffer an idle connection keeps: a big
// insert's would otherwise stay with it.
const keptBuffer = 64 << 10

// releaseBuffers drops the buffers a big exchange left behind.
func (c *conn) releaseBuffers() {
	c.reader.Release()
	if cap(c.out) > keptBuffer {
		c.out = nil
	}
	if cap(c.encoded) > keptBuffer {
		c.encoded = nil
	}
}

func (c *conn) close() error { return c.nc.Close() }
