package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/diag"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

var validateFields = []string{"full", "background", "repair", "metadata", "checkBSONConformance", "enforceFastCount", "scandata", "logDiagnostics", "fixMultikey"}

// cmdValidate checks a collection's documents against its indexes, as
// MongoDB's foreground validate does. Mayfly always runs every check, so
// full makes no difference; repair and background are not supported.
func cmdValidate(h *Handler, r *request) (bson.D, error) {
	name, err := collectionArg(r)
	if err != nil {
		return nil, err
	}
	if err := checkFields(r, validateFields...); err != nil {
		return nil, err
	}
	if err := checkValidateOptions(r); err != nil {
		return nil, err
	}
	c := h.deps.Store.Collection(r.db, name)
	if c == nil {
		return nil, mongoerr.Newf(mongoerr.NamespaceNotFound, "Collection '%s.%s' does not exist to validate.", r.db, name)
	}
	res, err := c.Validate(r.ctx)
	if err != nil {
		return nil, interruptionOr(r.ctx, err)
	}
	return diag.ValidateReport(c, res), nil
}

func checkValidateOptions(r *request) error {
	opt := map[string]bool{}
	for _, f := range []string{"full", "background", "repair", "metadata", "enforceFastCount", "checkBSONConformance"} {
		b, err := optBool(r, f)
		if err != nil {
			return err
		}
		opt[f] = b
	}
	switch {
	case opt["background"] && opt["full"]:
		return mongoerr.New(mongoerr.InvalidOptions, "Running the validate command with both { background: true } and { full: true } is not supported.")
	case opt["background"]:
		return mongoerr.New(mongoerr.CommandNotSupported, "Running the validate command with { background: true } is not supported in standalone mode")
	case opt["metadata"] && (opt["full"] || opt["repair"] || opt["enforceFastCount"] || opt["checkBSONConformance"]):
		return mongoerr.New(mongoerr.InvalidOptions, "Running the validate command with { metadata: true } is not supported with any other options")
	case opt["repair"]:
		return mongoerr.New(mongoerr.CommandNotSupported, "Running the validate command with { repair: true } is not supported by Mayfly")
	}
	return nil
}
