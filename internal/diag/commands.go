package diag

import (
	"runtime"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/logring"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/wire"
)

// The process commands mongod and mayfly route answer alike, each for
// its own process.

// BuildInfo is buildInfo's reply for a server of the given version
// ("8.0.0") and gitVersion.
func BuildInfo(version, gitVersion string) bson.D {
	return bson.D{
		{Key: "version", Value: version},
		{Key: "gitVersion", Value: gitVersion},
		{Key: "modules", Value: bson.A{}},
		{Key: "allocator", Value: "go"},
		{Key: "javascriptEngine", Value: "none"},
		{Key: "sysInfo", Value: "deprecated"},
		{Key: "versionArray", Value: versionArray(version)},
		{Key: "bits", Value: int32(64)},
		{Key: "debug", Value: false},
		{Key: "maxBsonObjectSize", Value: int32(wire.MaxBSONObjectSize)},
		{Key: "buildEnvironment", Value: bson.D{
			{Key: "target_os", Value: runtime.GOOS},
			{Key: "target_arch", Value: Arch()},
		}},
	}
}

// versionArray is "8.0.0" as buildInfo's [8, 0, 0, 0].
func versionArray(v string) bson.A {
	arr := bson.A{}
	n := int32(0)
	for i := 0; i <= len(v); i++ {
		if i == len(v) || v[i] == '.' {
			arr = append(arr, n)
			n = 0
			continue
		}
		n = n*10 + int32(v[i]-'0')
	}
	for len(arr) < 4 {
		arr = append(arr, int32(0))
	}
	return arr
}

// GetLog is getLog's reply for its argument: the names of the logs for
// "*", else the lines the ring holds of the log named.
func GetLog(ring *logring.Ring, arg any) (bson.D, error) {
	which, ok := arg.(string)
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "Argument to getLog must be of type String")
	}
	switch which {
	case "*":
		return bson.D{{Key: "names", Value: bson.A{"global", "startupWarnings"}}}, nil
	case "global", "startupWarnings":
		return LogLines(ring, which), nil
	}
	return nil, mongoerr.Newf(mongoerr.OperationFailed, "No log named '%s'", which)
}

// CmdLineOpts is getCmdLineOpts's reply: the process's arguments and the
// settings they gave.
func CmdLineOpts(argv []string, parsed bson.D) bson.D {
	args := bson.A{}
	for _, a := range argv {
		args = append(args, a)
	}
	if parsed == nil {
		parsed = bson.D{}
	}
	return bson.D{{Key: "argv", Value: args}, {Key: "parsed", Value: parsed}}
}

// CommandInfo is what listCommands says of one command.
type CommandInfo struct {
	Name             string
	AdminOnly, APIV1 bool
}

// ListCommands is listCommands's reply for the commands given, in the
// order given (sorted by name, as mongod lists them).
func ListCommands(cmds []CommandInfo) bson.D {
	out := bson.D{}
	for _, c := range cmds {
		versions := bson.A{}
		if c.APIV1 {
			versions = append(versions, "1")
		}
		out = append(out, bson.E{Key: c.Name, Value: bson.D{
			{Key: "help", Value: ""},
			{Key: "requiresAuth", Value: auth.RequiresAuthentication(c.Name)},
			{Key: "secondaryOk", Value: true},
			{Key: "adminOnly", Value: c.AdminOnly},
			{Key: "apiVersions", Value: versions},
			{Key: "deprecatedApiVersions", Value: bson.A{}},
		}})
	}
	return bson.D{{Key: "commands", Value: out}}
}
