package commands

import "testing"

// What Handle allocates with a request serves one use each, however many
// copies of the request ask: a second read gets an Op of its own.
func TestHandledSparesServeOnce(t *testing.T) {
	hr := newHandled("insert")
	r := &hr.req
	r.handled = hr
	inner := *r // as views and applyOps run commands of their own
	if op := inner.handled.takeReadOp(); op != &hr.readOp {
		t.Error("the first read does not get the request's Op")
	}
	if op := r.handled.takeReadOp(); op == &hr.readOp || op == nil {
		t.Error("a second read gets the Op the first has")
	}
	if mt := r.handled.takeMaxTime(); mt != hr.maxTime || mt == nil {
		t.Error("the request's maxTimeMS does not get its context")
	}
	if mt := inner.handled.takeMaxTime(); mt != nil {
		t.Error("a second maxTimeMS gets the context the first has")
	}
	var made *handled // a request Handle did not make
	if made.takeReadOp() == nil || made.takeMaxTime() != nil {
		t.Error("a request without a handled block gets no Op, or a context")
	}
	if newHandled("find").takeMaxTime() != nil {
		t.Error("a read's maxTimeMS context comes with its request, which its cursor would keep")
	}
}

// A write command's struct comes with its request's block once; any
// other command, or a second write, gets one of its own.
func TestHandledWriteCommandServesOnce(t *testing.T) {
	hr := newHandled("update")
	if u := hr.takeUpdate(); u != hr.update || u == nil {
		t.Error("an update does not get its block's struct")
	}
	if u := hr.takeUpdate(); u == hr.update || u == nil {
		t.Error("a second update gets the struct the first has")
	}
	if d := newHandled("find").takeDelete(); d == nil {
		t.Error("a delete run by another command gets no struct")
	}
}
