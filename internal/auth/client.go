package auth

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/wire"
)

// Credential is what a client authenticates with.
type Credential struct {
	User, DB, Password string
	Mechanism          string // MechSHA256 (default) or MechSHA1
}

// String never shows the password.
func (c Credential) String() string { return c.User + "@" + c.DB }

// RoundTrip sends one command to db and returns the reply document.
type RoundTrip func(ctx context.Context, db string, cmd bson.D) (bson.D, error)

// Authenticate runs a SCRAM conversation as cred over rt: the client side
// of saslStart/saslContinue, for members of a replica set to prove the
// shared key to each other (see KeyFile.Credential).
func Authenticate(ctx context.Context, rt RoundTrip, cred Credential) error {
	conv, err := clientConversation(cred)
	if err != nil {
		return err
	}
	first, err := conv.Step("")
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	reply, err := rt(ctx, cred.DB, bson.D{
		{Key: "saslStart", Value: int32(1)}, {Key: "mechanism", Value: cred.mechanism()},
		{Key: "payload", Value: bson.Binary{Data: []byte(first)}},
		{Key: "options", Value: bson.D{{Key: "skipEmptyExchange", Value: true}}},
	})
	for step := 0; ; step++ {
		if err != nil {
			return err
		}
		if err := replyError(reply); err != nil {
			return err
		}
		payload, _ := bsonutil.Field(reply, "payload")
		bin, _ := payload.(bson.Binary)
		if done, _ := bsonutil.Field(reply, "done"); done == true {
			return finish(conv, bin.Data)
		}
		if step > 2 {
			return errors.New("auth: conversation did not end")
		}
		next, stepErr := conv.Step(string(bin.Data))
		if stepErr != nil {
			return fmt.Errorf("auth: server answer rejected: %w", stepErr)
		}
		reply, err = rt(ctx, cred.DB, bson.D{
			{Key: "saslContinue", Value: int32(1)}, {Key: "conversationId", Value: conversationID},
			{Key: "payload", Value: bson.Binary{Data: []byte(next)}},
		})
	}
}

func (c Credential) mechanism() string {
	if c.Mechanism == "" {
		return MechSHA256
	}
	return c.Mechanism
}

func clientConversation(cred Credential) (*scram.ClientConversation, error) {
	var client *scram.Client
	var err error
	switch cred.mechanism() {
	case MechSHA1:
		client, err = scram.SHA1.NewClientUnprepped(cred.User, DigestSHA1(cred.User, cred.Password), "")
	case MechSHA256:
		client, err = scram.SHA256.NewClient(cred.User, cred.Password, "")
	default:
		return nil, fmt.Errorf("auth: unknown mechanism %q", cred.Mechanism)
	}
	if err != nil {
		return nil, fmt.Errorf("auth: prepare password: %w", err)
	}
	return client.NewConversation(), nil
}

// finish checks the server's signature: the server proves it too knows
// the key.
func finish(conv *scram.ClientConversation, final []byte) error {
	if conv.Done() {
		return nil
	}
	if _, err := conv.Step(string(final)); err != nil || !conv.Valid() {
		return fmt.Errorf("auth: server signature rejected: %v", err)
	}
	return nil
}

// CommandError is an error reply received by Authenticate.
type CommandError struct {
	Code int32
	Msg  string
}

func (e *CommandError) Error() string { return fmt.Sprintf("auth: (%d) %s", e.Code, e.Msg) }

func replyError(reply bson.D) error {
	ok, _ := bsonutil.Field(reply, "ok")
	if f, isF := ok.(float64); isF && f == 1 {
		return nil
	}
	code, _ := bsonutil.Field(reply, "code")
	msg, _ := bsonutil.Field(reply, "errmsg")
	c, _ := code.(int32)
	return &CommandError{Code: c, Msg: stringOf(msg)}
}

// Dial connects to addr (over TLS when tlsCfg is set) and authenticates
// as cred (unless it names no user): what a replica set member does
// before talking to another. The returned RoundTrip runs further commands
// on the connection.
func Dial(ctx context.Context, addr string, tlsCfg *tls.Config, cred Credential) (net.Conn, RoundTrip, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("auth: dial %s: %w", addr, err)
	}
	if tlsCfg != nil {
		tc := tls.Client(nc, tlsCfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, nil, fmt.Errorf("auth: TLS with %s: %w", addr, err)
		}
		nc = tc
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
		defer func() { _ = nc.SetDeadline(time.Time{}) }()
	}
	rt := WireRoundTrip(nc)
	if cred.User == "" {
		return nc, rt, nil
	}
	if err := Authenticate(ctx, rt, cred); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, rt, nil
}

// WireRoundTrip sends commands as OP_MSG over a connection (plain or
// TLS) and reads the replies; for one goroutine at a time.
func WireRoundTrip(rw io.ReadWriter) RoundTrip {
	var requestID atomic.Int32
	return func(ctx context.Context, db string, cmd bson.D) (bson.D, error) {
		body, err := bson.Marshal(append(append(bson.D(nil), cmd...), bson.E{Key: "$db", Value: db}))
		if err != nil {
			return nil, fmt.Errorf("auth: encode command: %w", err)
		}
		if _, err := rw.Write(wire.AppendMsg(nil, requestID.Add(1), 0, 0, body)); err != nil {
			return nil, fmt.Errorf("auth: send: %w", err)
		}
		return readReply(rw)
	}
}

func readReply(r io.Reader) (bson.D, error) {
	msg, err := wire.ReadMessage(r, wire.NewCodec())
	if err != nil {
		return nil, fmt.Errorf("auth: read reply: %w", err)
	}
	doc, err := msg.Command()
	if err != nil {
		return nil, fmt.Errorf("auth: decode reply: %w", err)
	}
	return doc, nil
}
