package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/mayflydb/mayfly/internal/bsonutil"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// conversationID is the only conversation id mongod ever hands out.
const conversationID = int32(1)

// conversation is one SCRAM exchange in progress on a connection.
type conversation struct {
	mech      string
	db        string
	user      string
	scram     *scram.ServerConversation
	skipEmpty bool
	// verified is set once the client's proof checked out; without
	// skipEmptyExchange the client still sends one empty message.
	verified bool
}

var errAuthFailed = mongoerr.New(mongoerr.AuthenticationFailed, "Authentication failed.")

// saslStart begins a conversation: it parses the client's first message
// and answers with the salt and iteration count.
func (m *Manager) saslStart(c Conn, db string, body bson.D) (bson.D, error) {
	mechV, _ := bsonutil.Field(body, "mechanism")
	mech, ok := mechV.(string)
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "BSON field 'saslStart.mechanism' is missing but a required field")
	}
	hash, ok := hashFor(mech)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.MechanismUnavailable,
			"Received authentication for mechanism %s which is unknown or not enabled", mech)
	}
	payload, err := payloadOf(body)
	if err != nil {
		return nil, err
	}
	conv := &conversation{mech: mech, db: db, skipEmpty: skipEmptyExchange(body)}
	srv, err := hash.NewServer(func(name string) (scram.StoredCredentials, error) {
		conv.user = name
		return m.credentialFor(UserName{User: name, DB: db}, mech)
	})
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	conv.scram = srv.NewConversation()
	s := sessionOf(c)
	s.conv = nil
	out, err := conv.scram.Step(string(payload))
	if err != nil {
		return nil, m.failed(c, conv, err)
	}
	s.conv = conv
	return saslReply(false, out), nil
}

// credentialFor returns the stored keys of a user for a mechanism, from
// the in-memory user table: a login costs no storage read and no key
// derivation on the server.
func (m *Manager) credentialFor(n UserName, mech string) (scram.StoredCredentials, error) {
	u := m.lookupUser(n)
	if u == nil {
		return scram.StoredCredentials{}, errors.New("no such user")
	}
	sec := u.Credentials[mech]
	if sec == nil {
		return scram.StoredCredentials{}, fmt.Errorf("user has no %s credentials", mech)
	}
	return sec.stored(), nil
}

// saslContinue carries the conversation on to its end.
func (m *Manager) saslContinue(c Conn, body bson.D) (bson.D, error) {
	s := sessionOf(c)
	conv := s.conv
	if conv == nil {
		return nil, mongoerr.New(mongoerr.ProtocolError, "No SASL session state found")
	}
	if id, _ := bsonutil.Field(body, "conversationId"); !sameConversation(id) {
		s.conv = nil
		return nil, mongoerr.New(mongoerr.ProtocolError, "sasl: Mismatched conversation id")
	}
	payload, err := payloadOf(body)
	if err != nil {
		s.conv = nil
		return nil, err
	}
	if conv.verified {
		s.conv = nil
		return saslReply(true, ""), m.succeeded(c, s, conv)
	}
	out, err := conv.scram.Step(string(payload))
	if err == nil && !conv.scram.Valid() {
		err = errors.New("invalid proof")
	}
	if z := conv.scram.AuthzID(); err == nil && z != "" && z != conv.user {
		// mongod authenticates only as the user the keys belong to.
		err = fmt.Errorf("authorization identity %q differs from the user", z)
	}
	if err != nil {
		s.conv = nil
		return nil, m.failed(c, conv, err)
	}
	conv.verified = true
	if !conv.skipEmpty {
		return saslReply(false, out), nil
	}
	s.conv = nil
	return saslReply(true, out), m.succeeded(c, s, conv)
}

func (m *Manager) succeeded(c Conn, s *Session, conv *conversation) error {
	n := UserName{User: conv.user, DB: conv.db}
	if s.user != nil && *s.user != n {
		return mongoerr.Newf(mongoerr.Location5626701,
			"Each client connection may only be authenticated once. Previously authenticated as: %s", s.user)
	}
	s.user, s.name = &n, n.String()
	s.decisions = nil
	m.log.Info("Successfully authenticated", "user", n.User, "db", n.DB, "mechanism", conv.mech,
		"remote", c.RemoteAddr())
	return nil
}

// failed logs a failed attempt with the user name and the client's
// address (never the proof, which is derived from the password) and
// returns mongod's one answer for every failure.
func (m *Manager) failed(c Conn, conv *conversation, cause error) error {
	m.log.Info("Authentication failed", "user", conv.user, "db", conv.db, "mechanism", conv.mech,
		"remote", c.RemoteAddr(), "reason", cause.Error())
	return errAuthFailed
}

func sameConversation(v any) bool {
	switch id := v.(type) {
	case int32:
		return id == conversationID
	case int64:
		return id == int64(conversationID)
	case float64:
		return id == float64(conversationID)
	}
	return false
}

// payloadOf takes the payload as BinData or, as mongod also accepts, a
// base64 string.
func payloadOf(body bson.D) ([]byte, error) {
	v, ok := bsonutil.Field(body, "payload")
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "BSON field 'payload' is missing but a required field")
	}
	switch p := v.(type) {
	case bson.Binary:
		return p.Data, nil
	case string:
		b, err := base64.StdEncoding.DecodeString(p)
		if err != nil {
			return nil, mongoerr.Newf(mongoerr.BadValue, "Invalid base64 in payload: %v", err)
		}
		return b, nil
	}
	return nil, mongoerr.New(mongoerr.BadValue, "BSON field 'payload' must be BinData or a base64 string")
}

func skipEmptyExchange(body bson.D) bool {
	opts, _ := bsonutil.Field(body, "options")
	d, _ := opts.(bson.D)
	v, _ := bsonutil.Field(d, "skipEmptyExchange")
	return v == true
}

func saslReply(done bool, payload string) bson.D {
	return bson.D{
		{Key: "conversationId", Value: conversationID},
		{Key: "done", Value: done},
		{Key: "payload", Value: bson.Binary{Data: []byte(payload)}},
	}
}
