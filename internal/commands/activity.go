package commands

import (
	"context"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/activity"
	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cursor/paging"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/nsjoin"
	"github.com/mayflydb/mayfly/internal/profiler"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/txnrules"
)

// namespace is the namespace a command works on ("db.coll", or
// "db.$cmd" for commands without a collection).
func (r *request) namespace() string {
	if r.ns != "" {
		return r.ns
	}
	if s, ok := r.body[0].Value.(string); ok && s != "" && r.name != "getLog" && r.name != "renameCollection" {
		ns := r.joinedNamespace(s)
		r.ns, r.nsv = ns.S, ns.V
	} else {
		ns := r.joinedNamespace("$cmd")
		r.ns, r.nsv = ns.S, ns.V
	}
	return r.ns
}

// joinNamespace is r.db + "." + coll.
func (r *request) joinNamespace(coll string) string { return r.joinedNamespace(coll).S }

// joinedNamespace is r.db + "." + coll, boxed too when the Handler keeps
// it (namespaces).
func (r *request) joinedNamespace(coll string) nsjoin.Joined {
	if r.names == nil {
		return nsjoin.Joined{S: r.db + "." + coll}
	}
	return r.names.Join(r.db, coll)
}

// boxedNamespace is ns in an interface, for a reply's ns field: the
// request's own namespace was boxed once, when the Handler joined it.
func (r *request) boxedNamespace(ns string) any {
	if r != nil && r.nsv != nil && ns == r.ns {
		return r.nsv
	}
	return ns
}

func (h *Handler) beginOp(r *request, cancel context.CancelCauseFunc, began time.Time) int64 {
	return h.deps.Activity.BeginCancelable(activity.Op{
		Desc: r.conn.Desc(), Kind: activity.OpKind(r.name), NS: r.namespace(),
		Command: r.body, Client: r.conn.RemoteAddr(), ConnID: r.conn.ID(), Started: began,
	}, cancel)
}

// waiting marks r's operation as waiting for data or an event until the
// returned func is called (activity.Registry.Wait): an idle change
// stream or awaitable hello does not make the server busy.
func (h *Handler) waiting(r *request) (resume func()) {
	if r.opID == 0 {
		return func() {}
	}
	return h.deps.Activity.Wait(r.opID)
}

// profile records a finished command in <db>.system.profile when the
// database's profiler asks for it.
func (h *Handler) profile(r *request, d time.Duration, reply bson.D) {
	if strings.HasSuffix(r.namespace(), "."+profiler.Collection) || !h.deps.Profiler.ShouldProfile(r.db, d) {
		return
	}
	profiler.Record(h.deps.Store, h.deps.Logger, r.db, bson.D{
		{Key: "op", Value: activity.OpKind(r.name)},
		{Key: "ns", Value: r.namespace()},
		{Key: "command", Value: r.body},
		{Key: "ok", Value: lookupOK(reply)},
		{Key: "millis", Value: d.Milliseconds()},
		{Key: "ts", Value: bson.NewDateTimeFromTime(h.deps.Clock.Now().Add(-d))}, // when it started, by the server's clock
		{Key: "client", Value: r.conn.RemoteAddr()},
		{Key: "user", Value: h.deps.Auth.UserOf(r.conn)},
	})
}

func lookupOK(reply bson.D) float64 {
	if v, ok := bsonutil.Field(reply, "ok"); ok {
		if f, isF := v.(float64); isF {
			return f
		}
	}
	return 1
}

func cmdProfile(h *Handler, r *request) (bson.D, error) {
	return h.deps.Profiler.Command(r.db, r.body, nil)
}

func cmdCurrentOp(h *Handler, r *request) (bson.D, error) {
	if err := requireAdmin(r); err != nil {
		return nil, err
	}
	return activity.InProg(r.body, h.currentOpDocs(true), h.deps.Clock.Now())
}

// collectionlessAggregate runs {aggregate: 1} pipelines; Mayfly supports
// those that start with $currentOp.
func (h *Handler) collectionlessAggregate(r *request, stages bson.A, batch int64) (bson.D, error) {
	first, _ := stages[0].(bson.D)
	if len(first) == 1 && first[0].Key == "$documents" {
		return h.documentsAggregate(r, stages, batch)
	}
	if len(first) == 1 && first[0].Key == "$listLocalSessions" {
		docs, err := h.listLocalSessions(r, first[0].Value)
		if err != nil {
			return nil, err
		}
		return h.runOverDocs(r, stages[1:], docs, batch)
	}
	if len(first) != 1 || first[0].Key != "$currentOp" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "{aggregate: 1} is only supported with $currentOp, $documents and $listLocalSessions by Mayfly")
	}
	if r.db != "admin" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$currentOp must be run against the 'admin' database with {aggregate: 1}")
	}
	return h.runOverDocs(r, stages[1:], h.currentOpDocs(txnrules.WantsIdleSessions(first[0].Value)), batch)
}

// runOverDocs runs the stages after a collectionless first stage over the
// documents it produced, and replies with a cursor, or writes them where
// a last $out or $merge says.
func (h *Handler) runOverDocs(r *request, stages bson.A, docs []bson.D, batch int64) (bson.D, error) {
	t, err := writeStage(r)
	if err != nil {
		return nil, err
	}
	if t != nil {
		stages = stages[:len(stages)-1]
	}
	out, err := h.pipelineOverDocs(stages, docs)
	if err != nil {
		return nil, err
	}
	ns := r.db + ".$cmd.aggregate"
	if t != nil {
		return h.writeInto(r, ns, t, out)
	}
	return h.requestCursorReply(r, ns, out, batch, false)
}

// pipelineOverDocs runs stages over docs.
func (h *Handler) pipelineOverDocs(stages bson.A, docs []bson.D) (aggregate.Iterator, error) {
	p, err := aggregate.Parse(stages, aggregate.Options{})
	if err != nil {
		return nil, err
	}
	return p.Run(paging.Slice(docs...), aggregate.Standalone(h.deps.Clock.Now(), nil))
}

// currentOpDocs lists the operations in flight as $currentOp shows them,
// then the idle sessions in a transaction when idleSessions asks.
func (h *Handler) currentOpDocs(idleSessions bool) []bson.D {
	now := h.deps.Clock.Now()
	docs := h.deps.Activity.Docs(now, "localhost")
	if idleSessions && h.txns != nil {
		docs = append(docs, h.idleSessionDocs(now, "localhost")...)
	}
	return docs
}

// killable makes r's context one killOp can end, and returns the func
// that ends it: the server's cancel of the command's context when it gave
// one (so a command costs no second context), else the cancel of a
// context derived here.
func killable(r *request, cmd *server.Command) context.CancelCauseFunc {
	if cmd.Cancel != nil {
		return cmd.Cancel
	}
	var cancel context.CancelCauseFunc
	r.ctx, cancel = context.WithCancelCause(r.ctx)
	return cancel
}
