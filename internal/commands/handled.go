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
		b := new(struct {
			hr  handled
			cmd insertCmd
			mt  maxtime.Context
		})
		b.hr.insert, b.hr.maxTime = &b.cmd, &b.mt
		return &b.hr
	case "update":
		b := new(struct {
			hr  handled
			cmd updateCmd
			mt  maxtime.Context
		})
		b.hr.update, b.hr.maxTime = &b.cmd, &b.mt
		return &b.hr
	case "delete":
		b := new(struct {
			hr  handled
			cmd deleteCmd
			mt  maxtime.Context
		})
		b.hr.delete, b.hr.maxTime = &b.cmd, &b.mt
		return &b.hr
	}
	return new(handled)
}

// takeInsert is a zero insertCmd for the request: the block's the first
// time, a new one after or when there is none (hr nil: a request that
// Handle did not make). So are takeUpdate and takeDelete.
func (hr *handled) takeInsert() *insertCmd {
	if hr == nil || hr.insert == nil || hr.writeTaken.Swap(true) {
		return new(insertCmd)
	}
	return hr.insert
}

func (hr *handled) takeUpdate() *updateCmd {
	if hr == nil || hr.update == nil || hr.writeTaken.Swap(true) {
		return new(updateCmd)
	}
	return hr.update
}

func (hr *handled) takeDelete() *deleteCmd {
	if hr == nil || hr.delete == nil || hr.writeTaken.Swap(true) {
		return new(deleteCmd)
	}
	return hr.delete
}

// takeMaxTime is a zero maxtime.Context for the request's maxTimeMS: maxTime
// the first time, nil after or when there is none (newMaxTimeCtx
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
