package opstats

import "sync/atomic"

// OpCounters are serverStatus's opcounters, counted as mongod counts
// them: find counts one query and getMore one getmore as they start;
// insert counts the documents it inserted, update and delete each
// statement they ran, and bulkWrite each of its operations so, once they
// are done (the command layer adds those); every other command
// (findAndModify, aggregate, count, ...) counts one command as it starts.
type OpCounters struct {
	Insert, Query, Update, Delete, GetMore, Command atomic.Int64
}

// Start counts the command called name as it starts; the writes count
// when done.
func (c *OpCounters) Start(name string) {
	switch name {
	case "insert", "update", "delete", "bulkWrite":
	case "find":
		c.Query.Add(1)
	case "getMore":
		c.GetMore.Add(1)
	default:
		c.Command.Add(1)
	}
}
