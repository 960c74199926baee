package replcmds

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/repl"
)

// writeConcern is a command's writeConcern as a replica set applies it.
type writeConcern struct {
	w        int  // members that must have the write (0: none, 1: this one)
	majority bool // w: "majority"
	wtimeout time.Duration
}

func parseWriteConcern(c cmdargs.Call) (writeConcern, error) {
	wc := writeConcern{w: 1}
	d, err := c.OptDoc("writeConcern")
	if err != nil || d == nil {
		return wc, err
	}
	if v, ok := bsonutil.Field(d, "w"); ok {
		switch w := v.(type) {
		case string:
			if w != "majority" {
				return wc, mongoerr.Newf(mongoerr.UnknownReplWriteConcern, "No write concern mode named '%s' found in replica set configuration", w)
			}
			wc.majority = true
		default:
			n, err := cmdargs.Int64("writeConcern", "w", v)
			if err != nil || n < 0 {
				return wc, mongoerr.New(mongoerr.FailedToParse, "w has to be a non-negative number and not greater than 50; or a string")
			}
			wc.w = int(n)
		}
	}
	if v, ok := bsonutil.Field(d, "wtimeout"); ok {
		ms, err := cmdargs.Int64("writeConcern", "wtimeout", v)
		if err != nil {
			return wc, err
		}
		wc.wtimeout = time.Duration(ms) * time.Millisecond
	}
	return wc, nil
}

// AwaitWriteConcern waits until the write concern of c, a write the
// primary took, is met; a failure becomes the reply's
// writeConcernError. Every acknowledged write is already committed by a
// majority and applied here, so only w greater than that waits.
func (m Member) AwaitWriteConcern(ctx context.Context, c cmdargs.Call, reply bson.D) bson.D {
	wc, err := parseWriteConcern(c)
	if err != nil || wc.w <= 1 || wc.majority {
		return reply
	}
	err = m.Repl.WaitForMembers(ctx, wc.w, wc.wtimeout)
	switch {
	case err == nil:
		return reply
	case errors.Is(err, repl.ErrWriteConcernTimeout):
		return append(reply, bson.E{Key: "writeConcernError", Value: bson.D{
			{Key: "code", Value: int32(mongoerr.WriteConcernTimeout)}, {Key: "codeName", Value: mongoerr.WriteConcernTimeout.Name()},
			{Key: "errmsg", Value: "waiting for replication timed out"}, {Key: "errInfo", Value: bson.D{{Key: "wtimeout", Value: true}}},
		}})
	case errors.Is(err, repl.ErrUnsatisfiableWriteConcern):
		return append(reply, bson.E{Key: "writeConcernError", Value: bson.D{
			{Key: "code", Value: int32(mongoerr.UnsatisfiableWriteConcern)}, {Key: "codeName", Value: mongoerr.UnsatisfiableWriteConcern.Name()},
			{Key: "errmsg", Value: "Not enough data-bearing nodes"},
		}})
	}
	me := mongoerr.As(Error(err))
	return append(reply, bson.E{Key: "writeConcernError", Value: bson.D{
		{Key: "code", Value: int32(me.Code)}, {Key: "codeName", Value: me.Code.Name()}, {Key: "errmsg", Value: me.Msg},
	}})
}

// AwaitReadConcern makes a read see what its read concern asks for:
// linearizable confirms leadership with a majority and waits for the
// commit point; afterClusterTime waits for that time to be applied. The
// wait's own error is the context's, for the caller to name.
func (m Member) AwaitReadConcern(ctx context.Context, c cmdargs.Call) error {
	d, err := c.OptDoc("readConcern")
	if err != nil || d == nil {
		return err
	}
	level, _ := bsonutil.Field(d, "level")
	if level == "linearizable" {
		if err := m.Repl.ReadLinearizable(ctx); err != nil {
			return Error(err)
		}
	}
	if v, ok := bsonutil.Field(d, "afterClusterTime"); ok {
		ts, ok := v.(bson.Timestamp)
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "afterClusterTime must be a timestamp")
		}
		return m.Repl.WaitForTimestamp(ctx, changestream.Timestamp{T: ts.T, I: ts.I})
	}
	return nil
}
