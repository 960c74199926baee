package failpoint

import (
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// CommandFailure is failCommand's data, read as mongod reads it: a field
// of the wrong type counts as absent.
type CommandFailure struct {
	Commands     []string // failCommands
	AppName      string
	HasAppName   bool
	Namespace    string
	HasNamespace bool
	FailInternal bool // failInternalCommands

	ErrorCode    mongoerr.Code
	HasErrorCode bool
	// ErrorLabels replace the labels the server would give the error; nil
	// when the data has none (an empty array is kept: no labels).
	ErrorLabels       bson.A
	WriteConcernError any
	HasWriteConcern   bool
	CloseConnection   bool
	BlockConnection   bool
	blockTimeMS       any
	hasBlockTimeMS    bool
}

// Call describes the command a failCommand point is asked about.
type Call struct {
	Names     []string // the command's name and its aliases
	AppName   string   // the client's appName from its handshake
	Namespace string
	Internal  bool // sent by another member of the cluster
}

// ReadCommandFailure reads failCommand's data.
func ReadCommandFailure(data bson.D) CommandFailure {
	var f CommandFailure
	for _, e := range data {
		f.readField(e)
	}
	if n, err := IntegerField(data, "errorCode"); err == nil {
		f.ErrorCode, f.HasErrorCode = mongoerr.Code(n), true
	}
	return f
}

func (f *CommandFailure) readField(e bson.E) {
	switch e.Key {
	case "failCommands":
		arr, _ := e.Value.(bson.A)
		for _, v := range arr {
			if s, ok := v.(string); ok {
				f.Commands = append(f.Commands, s)
			}
		}
	case "appName":
		f.AppName, f.HasAppName = stringOf(e.Value), true
	case "namespace":
		f.Namespace, f.HasNamespace = stringOf(e.Value), true
	case "failInternalCommands":
		f.FailInternal, _ = e.Value.(bool)
	case "errorLabels":
		if arr, ok := e.Value.(bson.A); ok {
			f.ErrorLabels = append(bson.A{}, arr...)
		}
	case "writeConcernError":
		f.WriteConcernError, f.HasWriteConcern = e.Value, true
	case "closeConnection":
		f.CloseConnection, _ = e.Value.(bool)
	case "blockConnection":
		f.BlockConnection, _ = e.Value.(bool)
	case "blockTimeMS":
		f.blockTimeMS, f.hasBlockTimeMS = e.Value, true
	}
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

// Applies reports whether the failure is about call: one of its commands,
// from its application and namespace, and not an internal command unless
// asked. configureFailPoint itself is never failed.
func (f CommandFailure) Applies(call Call) bool {
	if slices.Contains(call.Names, "configureFailPoint") {
		return false
	}
	if f.HasAppName && f.AppName != call.AppName {
		return false
	}
	if f.HasNamespace && f.Namespace != call.Namespace {
		return false
	}
	if call.Internal && !f.FailInternal {
		return false
	}
	for _, name := range f.Commands {
		if slices.Contains(call.Names, name) {
			return true
		}
	}
	return false
}

// FailsCommand reports whether the failure acts before the command runs:
// it closes the connection, blocks it, or answers with an error.
func (f CommandFailure) FailsCommand() bool {
	return f.CloseConnection || f.BlockConnection || f.HasErrorCode
}

// BlockTime is how long blockConnection holds the command, with mongod's
// errors for a missing or negative blockTimeMS.
func (f CommandFailure) BlockTime() (time.Duration, error) {
	if !f.hasBlockTimeMS {
		return 0, errNoBlockTime()
	}
	ms, err := IntegerField(bson.D{{Key: "blockTimeMS", Value: f.blockTimeMS}}, "blockTimeMS")
	if err != nil {
		return 0, errNoBlockTime()
	}
	if ms < 0 {
		return 0, mongoerr.New(mongoerr.InvalidOptions, "'blockTimeMS' must be non-negative")
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func errNoBlockTime() error {
	return mongoerr.New(mongoerr.InvalidOptions, "must specify 'blockTimeMS' when 'blockConnection' is true")
}

// Error is the error a failed command answers with; ErrorLabels, when
// given, ride along in the reply.
func (f CommandFailure) Error() *mongoerr.Error {
	e := mongoerr.New(f.ErrorCode, "Failing command via 'failCommand' failpoint")
	if f.ErrorLabels != nil {
		e.Extra = []mongoerr.KV{{Key: "errorLabels", Value: f.ErrorLabels}}
	}
	return e
}
