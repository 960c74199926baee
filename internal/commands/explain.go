package commands

import (
	"net"
	"os"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/executor"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func cmdExplain(h *Handler, r *request) (bson.D, error) {
	inner, ok := r.body[0].Value.(bson.D)
	if !ok || len(inner) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "explain command requires a nested object")
	}
	if err := checkFields(r, "verbosity"); err != nil {
		return nil, err
	}
	raw, given := bsonutil.Field(r.body, "verbosity")
	v, err := executor.ParseVerbosity(raw, given)
	if err != nil {
		return nil, err
	}
	if err := checkInnerDB(r, inner); err != nil {
		return nil, err
	}
	ir := &request{ctx: r.ctx, conn: r.conn, db: r.db, name: inner[0].Key, body: withoutDB(inner)}
	ex, err := h.explainCommand(ir, v)
	if err != nil {
		return nil, err
	}
	return h.explainReply(ir, ex, v), nil
}

func checkInnerDB(r *request, inner bson.D) error {
	v, ok := bsonutil.Field(inner, "$db")
	if !ok {
		return nil
	}
	if s, _ := v.(string); s != r.db {
		return mongoerr.Newf(mongoerr.InvalidNamespace, "Mismatched $db in explain command. Expected %s but got %v", r.db, v)
	}
	return nil
}

func withoutDB(d bson.D) bson.D {
	out := make(bson.D, 0, len(d))
	for _, e := range d {
		if e.Key != "$db" {
			out = append(out, e)
		}
	}
	return out
}

// explainCommand runs the explain of one command.
func (h *Handler) explainCommand(r *request, v executor.Verbosity) (*executor.Explained, error) {
	switch r.name {
	case "find":
		return h.explainFind(r, v)
	case "aggregate":
		return h.explainAggregate(r, v)
	case "count":
		return h.explainCount(r, v)
	case "distinct":
		return h.explainDistinct(r, v)
	case "update":
		return h.explainUpdate(r, v)
	case "delete":
		return h.explainDelete(r, v)
	case "findAndModify", "findandmodify":
		return h.explainFAM(r, v)
	case "explain":
		return nil, mongoerr.New(mongoerr.IllegalOperation, "Explain cannot explain itself.")
	}
	if _, known := h.table[r.name]; known {
		return nil, mongoerr.Newf(mongoerr.IllegalOperation, "Cannot explain cmd: %s", r.name)
	}
	return nil, mongoerr.Newf(mongoerr.CommandNotFound, "Explain failed due to unknown command: %s", r.name)
}

// explainReply assembles MongoDB's explain reply around ex.
func (h *Handler) explainReply(r *request, ex *executor.Explained, v executor.Verbosity) bson.D {
	cmd := append(append(bson.D{}, r.body...), bson.E{Key: "$db", Value: r.db})
	return ex.Reply(v, cmd, serverInfo(r))
}

func serverInfo(r *request) bson.D {
	host, _ := os.Hostname()
	port := int32(27017)
	if r.conn != nil {
		if _, p, err := net.SplitHostPort(r.conn.LocalAddr()); err == nil {
			if n, err := strconv.Atoi(p); err == nil {
				port = int32(n)
			}
		}
	}
	return bson.D{
		{Key: "host", Value: host},
		{Key: "port", Value: port},
		{Key: "version", Value: Version},
		{Key: "gitVersion", Value: "mayfly-" + MayflyVersion},
	}
}

// executor is the find/aggregate executor over this server's store.
func (h *Handler) executor() *executor.Executor { return executor.New(h.deps.Store, h.steady) }

// readOp hands the request r, reading coll, to the executor: its context,
// its interruption, and the scans and sorted results a cursor made from
// it keeps.
func (h *Handler) readOp(r *request, coll string) *executor.Op {
	op := r.handled.takeReadOp()
	*op = executor.Op{
		Ctx:      r.ctx,
		CheckCtx: checkInterrupt,
		Live:     &r.live,
		Env:      newAggEnv(h, r, coll),
		Txn:      r.storeTxn(),
	}
	return op
}

func (h *Handler) explainFind(r *request, v executor.Verbosity) (*executor.Explained, error) {
	var a findArgs
	if err := parseFind(h, r, &a); err != nil {
		return nil, err
	}
	c := h.deps.Store.Collection(r.db, a.coll)
	spec := a.spec(c)
	return h.executor().ExplainFind(h.readOp(r, a.coll), c, &spec, r.db+"."+a.coll, v)
}

func (h *Handler) explainCount(r *request, v executor.Verbosity) (*executor.Explained, error) {
	a, err := parseCountArgs(h, r)
	if err != nil {
		return nil, err
	}
	q := &executor.CountQuery{Query: a.query, Hint: a.hint, Collation: a.collation, Counted: a.counted}
	c := h.deps.Store.Collection(r.db, a.coll)
	return h.executor().ExplainCount(h.readOp(r, a.coll), c, q, r.db+"."+a.coll, v)
}

func (h *Handler) explainDistinct(r *request, v executor.Verbosity) (*executor.Explained, error) {
	name, err := collectionArg(r)
	if err != nil {
		return nil, err
	}
	if err := checkFields(r, "key", "query", "collation", "hint"); err != nil {
		return nil, err
	}
	q, err := optDoc(r, "query")
	if err != nil {
		return nil, err
	}
	coll, err := h.requestCollation(r)
	if err != nil {
		return nil, err
	}
	f, err := commandFilter(q, nil, coll)
	if err != nil {
		return nil, err
	}
	hint, _ := bsonutil.Field(r.body, "hint")
	ex, err := h.executor().PlanScan(h.readOp(r, name), h.deps.Store.Collection(r.db, name), f, docstore.Query{Filter: f, Hint: hint})
	if err != nil {
		return nil, err
	}
	return ex.ExplainAll(r.db+"."+name, v, nil)
}

func (h *Handler) explainAggregate(r *request, v executor.Verbosity) (*executor.Explained, error) {
	if err := checkFields(r, aggregateFields...); err != nil {
		return nil, err
	}
	p, err := h.parsePipeline(r)
	if err != nil {
		return nil, err
	}
	coll, ok := r.body[0].Value.(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.InvalidNamespace, "{aggregate: 1} is not supported by Mayfly for this pipeline")
	}
	ex, p, err := h.planAggregate(r, coll, p)
	if err != nil {
		return nil, err
	}
	return ex.ExplainPipeline(p, r.db+"."+coll, v)
}

// aggregateExplainReply answers aggregate's explain: true option, which is
// explain at queryPlanner verbosity.
func (h *Handler) aggregateExplainReply(r *request) (bson.D, error) {
	ex, err := h.explainAggregate(r, executor.QueryPlannerOnly)
	if err != nil {
		return nil, err
	}
	return h.explainReply(r, ex, executor.QueryPlannerOnly), nil
}
