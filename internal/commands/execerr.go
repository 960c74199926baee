package commands

// Error context prefixes mongod puts before an error raised while a
// query runs (not while it is parsed): mongoerr.CausedBy.
const (
	findExecContext      = "Executor error during find command"
	getMoreExecContext   = "Executor error during getMore"
	aggregateExecContext = "PlanExecutor error during aggregation"
	famExecContext       = "Plan executor error during findAndModify"
)
