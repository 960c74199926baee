package commands

// A collection's validator is set by create and collMod (internal/ddl)
// and applied by the docstore on every write (internal/validator) unless
// the write carries bypassDocumentValidation.

// bypassArg reads bypassDocumentValidation.
func bypassArg(r *request) (bool, error) {
	return optBool(r, "bypassDocumentValidation")
}
