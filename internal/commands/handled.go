package commands

import (
	"sync/atomic"

	"github.com/mayflydb/mayfly/internal/executor"
	"github.com/mayflydb/mayfly/internal/maxtime"
)

// handled is what Handle allocates for a command, in one object: its
// request, the executor.Op of a read, and for insert, update and delete
// the command's struct and the maxTimeMS context that drivers send with
// them. Nothing is reused: each part lives as long as anything holds it,
// keeping the request with it (the Op's funcs and the write command's
// struct hold the request anyway). A read's maxTimeMS context is not in
// the block: a cursor keeps its command's context until its first
// getMore, and must not keep the request (query.Filter.Lean); nor is a
// cursor reply's room: a sorted find's cursor keeps the request (its
// SORT step holds readOp's Check), and so would keep its first batch.
type handled struct {
	req    request
	readOp executor.Op
	// The write command's struct and its maxTimeMS context, allocated
	// with the block (newHandled); nil for other commands.
	insert  *insertCmd
	update  *updateCmd
	delete  *deleteCmd
	maxTime *maxtime.Context
	// maxTimeTaken, readOpTaken and writeTaken claim maxTime, readOp and
	// the write command's struct for one use each (the take methods):
	// copies of the request, which commands make to run others, share
	// the claims.
	maxTimeTaken, readOpTaken, writeTaken atomic.Bool
}

// newHandled is a zero block for the command called name.
func newHandled(name string) *handled {
	switch name {
	case "insert":
		return withWrite(func(hr *handled, c *insertCmd) { hr.insert = c })
	case "update":
		return withWrite(func(hr *handled, c *updateCmd) { hr.update = c })
	case "delete":
		return withWrite(func(hr *handled, c *deleteCmd) { hr.delete = c })
	}
	return new(handled)
}

// withWrite allocates a block with a write command's struct, which set
// names, and its maxTimeMS context.
func withWrite[T any](set func(hr *handled, cmd *T)) *handled {
	b := new(struct {
		hr  handled
		cmd T
		mt  maxtime.Context
	})
	set(&b.hr, &b.cmd)
	b.hr.maxTime = &b.mt
	return &b.hr
}

// takeInsert is a zero insertCmd for the request: the block's the first
// time, a new one after or when there is none (hr nil: a request that
// Handle did not make). So are takeUpdate and takeDelete.
func (hr *handled) takeInsert() *insertCmd {
	return takeWrite(hr, func(hr *handled) *insertCmd { return hr.insert })
}

func (hr *handled) takeUpdate() *updateCmd {
	return takeWrite(hr, func(hr *handled) *updateCmd { return hr.update })
}

func (hr *handled) takeDelete() *deleteCmd {
	return takeWrite(hr, func(hr *handled) *deleteCmd { return hr.delete })
}

// takeWrite is the block's write command struct that cmd reads, once.
func takeWrite[T any](hr *handled, cmd func(hr *handled) *T) *T {
	if hr != nil {
		if c := cmd(hr); c != nil && !hr.writeTaken.Swap(true) {
			return c
		}
	}
	return new(T)
}

// takeMaxTime is a zero maxtime.Context for the request's maxTimeMS:
// maxTime the first time, nil after or when there is none (maxtime.New
// allocates then).
func (hr *handled) takeMaxTime() *maxtime.Context {
	if hr == nil || hr.maxTime == nil || hr.maxTimeTaken.Swap(true) {
		return nil
	}
	return hr.maxTime
}

// takeReadOp is a zero executor.Op for a read of the request: readOp the
// first time, a new one after, and always a new one for a request that
// Handle did not make (hr nil).
func (hr *handled) takeReadOp() *executor.Op {
	if hr == nil || hr.readOpTaken.Swap(true) {
		return new(executor.Op)
	}
	return &hr.readOp
}
