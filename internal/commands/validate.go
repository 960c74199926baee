package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
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
	return validateReply(c, res), nil
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

func validateReply(c *docstore.Collection, res *docstore.ValidateResult) bson.D {
	keys, details := bson.D{}, bson.D{}
	for _, ix := range res.Indexes {
		keys = append(keys, bson.E{Key: ix.Name, Value: docstore.Num(ix.Keys)})
		details = append(details, bson.E{Key: ix.Name, Value: bson.D{{Key: "valid", Value: ix.Valid}}})
	}
	out := bson.D{
		{Key: "ns", Value: c.Namespace()},
		{Key: "uuid", Value: c.Meta().UUID},
		{Key: "nInvalidDocuments", Value: docstore.Num(res.InvalidDocs)},
		{Key: "nNonCompliantDocuments", Value: int32(0)},
		{Key: "nrecords", Value: docstore.Num(res.Records)},
		{Key: "nIndexes", Value: int32(len(res.Indexes))},
		{Key: "keysPerIndex", Value: keys},
		{Key: "indexDetails", Value: details},
		{Key: "valid", Value: res.Valid()},
		{Key: "repaired", Value: false},
		{Key: "warnings", Value: stringsArray(res.Warnings)},
		{Key: "errors", Value: stringsArray(res.Errors)},
		{Key: "extraIndexEntries", Value: docsArray(res.ExtraEntries)},
		{Key: "missingIndexEntries", Value: docsArray(res.MissingEntries)},
		{Key: "corruptRecords", Value: append(bson.A{}, res.CorruptRecords...)},
	}
	if !res.Valid() {
		out = append(out, bson.E{Key: "advice", Value: "A corrupt namespace has been detected. See http://dochub.mongodb.org/core/data-recovery for recovery steps."})
	}
	return out
}

func stringsArray(ss []string) bson.A {
	out := make(bson.A, 0, len(ss))
	for _, s := range ss {
		out = append(out, s)
	}
	return out
}

func docsArray(ds []bson.D) bson.A {
	out := make(bson.A, 0, len(ds))
	for _, d := range ds {
		out = append(out, d)
	}
	return out
}
