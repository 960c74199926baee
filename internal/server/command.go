package server

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/wire"
)

// command builds the Command for msg, in the connection's one Command
// (handlers copy what they keep). If the request cannot reach the
// handler, it also returns the error reply to send instead.
func (c *Conn) command(msg *wire.Message) (*Command, bson.D) {
	cmd := &c.cmd
	*cmd = Command{Size: int(msg.Header.MessageLength), MoreToCome: msg.MoreToCome()}
	if msg.Compressed {
		cmd.Compressor = msg.Compressor.String()
	}
	body, err := msg.Command()
	if err != nil {
		return cmd, mongoerr.Reply(err)
	}
	cmd.Body = body
	if len(body) > 0 {
		cmd.Name = body[0].Key
	}
	if msg.OpCode == wire.OpQuery {
		return cmd, legacyCommand(cmd, msg.Query)
	}
	return cmd, setDB(cmd)
}

// setDB takes the database from the required $db field.
func setDB(cmd *Command) bson.D {
	v, ok := bsonutil.Field(cmd.Body, "$db")
	if !ok {
		return mongoerr.Reply(mongoerr.New(mongoerr.Location40571, "OP_MSG requests require a $db argument"))
	}
	db, ok := v.(string)
	if !ok {
		return mongoerr.Reply(mongoerr.Newf(mongoerr.TypeMismatch,
			"BSON field '$db' is the wrong type '%s', expected type 'string'", typeName(v)))
	}
	cmd.DB = db
	return nil
}

// legacyCommand finishes an OP_QUERY command: only the handshake and a few
// authentication commands may arrive this way (MongoDB ≥ 5.1). The body
// gets $db, and the wrapper's $readPreference, as if sent by OP_MSG.
func legacyCommand(cmd *Command, q *wire.QueryFields) bson.D {
	cmd.Legacy = true
	db, coll, _ := strings.Cut(q.FullCollectionName, ".")
	if coll != "$cmd" {
		return unsupportedOpQuery("find")
	}
	if !legacyAllowed(cmd.Name) {
		return unsupportedOpQuery(cmd.Name)
	}
	cmd.DB = db
	if _, ok := bsonutil.Field(cmd.Body, "$db"); !ok {
		cmd.Body = append(cmd.Body, bson.E{Key: "$db", Value: db})
	}
	if _, ok := bsonutil.Field(cmd.Body, "$readPreference"); !ok && q.ReadPreference.Type == bson.TypeEmbeddedDocument {
		var rp bson.D
		if err := q.ReadPreference.Unmarshal(&rp); err != nil {
			return mongoerr.Reply(mongoerr.Newf(mongoerr.InvalidBSON, "invalid $readPreference: %v", err))
		}
		cmd.Body = append(cmd.Body, bson.E{Key: "$readPreference", Value: rp})
	}
	return nil
}

// legacyAllowed is MongoDB's allow-list of OP_QUERY commands (hello itself
// must never arrive over OP_QUERY).
func legacyAllowed(name string) bool {
	switch name {
	case "isMaster", "ismaster", "buildinfo", "buildInfo", "saslStart", "saslContinue",
		"authenticate", "_isSelf", "getnonce":
		return true
	}
	return false
}

func unsupportedOpQuery(name string) bson.D {
	return mongoerr.Reply(mongoerr.Newf(mongoerr.UnsupportedOpQueryCommand,
		"Unsupported OP_QUERY command: %s. The client driver may require an upgrade. "+
			"For more details see https://dochub.mongodb.org/core/legacy-opcode-removal", name))
}

// typeName names v's BSON type the way MongoDB error messages do.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case int32:
		return "int"
	case int64:
		return "long"
	case float64:
		return "double"
	case bool:
		return "bool"
	case bson.D:
		return "object"
	case bson.A:
		return "array"
	}
	return "unknown"
}
