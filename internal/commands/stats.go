package commands

import (
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/diag"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// scaleArg reads the scale field (default 1); MongoDB refuses one below 1.
func scaleArg(r *request) (int64, error) {
	v, ok := bsonutil.Field(r.body, "scale")
	if !ok {
		return 1, nil
	}
	n, err := cmdargs.Int64(r.name, "scale", v)
	if err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, mongoerr.New(mongoerr.BadValue, "scale has to be >= 1")
	}
	return n, nil
}

func cmdCollStats(h *Handler, r *request) (bson.D, error) {
	if err := checkFields(r, "scale", "verbose"); err != nil {
		return nil, err
	}
	coll, err := collectionArg(r)
	if err != nil {
		return nil, err
	}
	scale, err := scaleArg(r)
	if err != nil {
		return nil, err
	}
	ns := r.db + "." + coll
	out, found, err := h.storageStats(r.db, coll, scale, bson.D{{Key: "ns", Value: ns}})
	if !found {
		return diag.EmptyCollStats(ns, scale), nil
	}
	return out, err
}

// storageStats is collStats' reply (and $collStats' storageStats) for
// db.coll, a collection or a local view (localdb.go), after the given
// leading fields; found is false when there is neither.
func (h *Handler) storageStats(db, coll string, scale int64, head bson.D) (out bson.D, found bool, err error) {
	var s diag.Sizes
	var shape diag.Shape
	if h.localView(db, coll) {
		s, shape, err = h.localSizes(coll)
	} else if c := h.deps.Store.Collection(db, coll); c != nil {
		s, err = diag.SizesOf(c)
		shape = diag.ShapeOf(c)
	} else {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return diag.StorageStats(s, shape, scale, head), true, nil
}

// docCount is db.coll's document count as collStats gives it, without
// the sizes' scans.
func (h *Handler) docCount(db, coll string) (int64, error) {
	if h.localView(db, coll) {
		s, _, err := h.localSizes(coll)
		return s.Count, err
	}
	if c := h.deps.Store.Collection(db, coll); c != nil {
		return c.Count(), nil
	}
	return 0, nil
}

func cmdDBStats(h *Handler, r *request) (bson.D, error) {
	if err := checkFields(r, "scale", "freeStorage"); err != nil {
		return nil, err
	}
	scale, err := scaleArg(r)
	if err != nil {
		return nil, err
	}
	return diag.DBStats(h.deps.Store, r.db, scale, h.deps.DataDir)
}

func cmdDataSize(h *Handler, r *request) (bson.D, error) {
	if err := checkFields(r, "keyPattern", "min", "max", "estimate"); err != nil {
		return nil, err
	}
	ns, ok := r.body[0].Value.(string)
	if !ok {
		return nil, wrongType(r.name, r.name, r.body[0].Value, "string")
	}
	db, coll, _ := strings.Cut(ns, ".")
	started := h.deps.Clock.Now()
	c := h.deps.Store.Collection(db, coll)
	if c == nil {
		return bson.D{{Key: "size", Value: int64(0)}, {Key: "numObjects", Value: int64(0)}, {Key: "millis", Value: int64(0)}}, nil
	}
	bounds, err := dataSizeBounds(r)
	if err != nil {
		return nil, err
	}
	var size, n int64
	if bounds == nil {
		size, n = c.DataSize(), c.Count()
	} else if size, n, err = bounds.Measure(r.ctx, c); err != nil {
		return nil, interruptError(err)
	}
	millis := h.deps.Clock.Now().Sub(started).Milliseconds()
	return bson.D{{Key: "size", Value: size}, {Key: "numObjects", Value: n}, {Key: "millis", Value: millis}}, nil
}

// dataSizeBounds reads dataSize's keyPattern, min and max; nil when
// there is neither bound.
func dataSizeBounds(r *request) (*diag.KeyRange, error) {
	kp, hasKP := bsonutil.Field(r.body, "keyPattern")
	lo, hasMin := bsonutil.Field(r.body, "min")
	hi, hasMax := bsonutil.Field(r.body, "max")
	if !hasMin && !hasMax {
		return nil, nil
	}
	pattern, ok := kp.(bson.D)
	if !hasKP || !ok || len(pattern) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "need a valid keyPattern with min and max")
	}
	return &diag.KeyRange{Pattern: pattern, Min: bsonutil.ToD(lo), Max: bsonutil.ToD(hi)}, nil
}

// cmdTop is mongotop's source: time and count per namespace and kind, in
// microseconds, since the server started.
func cmdTop(h *Handler, r *request) (bson.D, error) {
	if err := requireAdmin(r); err != nil {
		return nil, err
	}
	return diag.Top(h.deps.OpStats), nil
}

// recordStats files a finished command in the operation statistics.
func (h *Handler) recordStats(r *request, d time.Duration, err error) {
	ns := r.namespace()
	if r.name == "getMore" {
		if coll, ok := bsonutil.Field(r.body, "collection"); ok {
			if s, isStr := coll.(string); isStr {
				ns = r.db + "." + s
			}
		}
	}
	internal := err != nil && mongoerr.As(clientError(err)).Code == mongoerr.InternalError
	h.deps.OpStats.Record(r.name, ns, d, err != nil, internal)
}
