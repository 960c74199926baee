package activity

import (
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// CurrentOpFilter is the currentOp command's filter: every field but the
// command's name, its $-options ($all, $ownOps) and the generic
// arguments.
func CurrentOpFilter(body bson.D) bson.D {
	filter := bson.D{}
	for _, e := range body[1:] {
		if !cmdargs.IsGeneric(e.Key) && !strings.HasPrefix(e.Key, "$") {
			filter = append(filter, e)
		}
	}
	return filter
}

// InProg is the currentOp command's reply over the operations docs
// lists: those its filter (CurrentOpFilter) matches, at now.
func InProg(body bson.D, docs []bson.D, now time.Time) (bson.D, error) {
	p, err := aggregate.Parse(bson.A{bson.D{{Key: "$match", Value: CurrentOpFilter(body)}}}, aggregate.Options{})
	if err != nil {
		return nil, err
	}
	out, err := p.Run(aggregate.Docs(docs...), aggregate.Standalone(now, nil))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	inprog := bson.A{}
	for {
		d, ok, err := out.Next()
		if !ok || err != nil {
			return bson.D{{Key: "inprog", Value: inprog}}, err
		}
		inprog = append(inprog, d)
	}
}

// ShardOp is a shard's $currentOp document as a router shows it: its
// shard named, its opid as "<shard>:<opid>" (what killOp through the
// router takes), and its client under client_s, since the client the
// shard saw is the router.
func ShardOp(doc bson.D, shard string) bson.D {
	out := make(bson.D, 0, len(doc)+1)
	out = append(out, bson.E{Key: "shard", Value: shard})
	for _, e := range doc {
		switch e.Key {
		case "shard":
			continue
		case "client":
			e.Key = "client_s"
		case "opid":
			e.Value = shard + ":" + opidString(e.Value)
		}
		out = append(out, e)
	}
	return out
}

func opidString(v any) string {
	switch n := v.(type) {
	case int32:
		return strconv.FormatInt(int64(n), 10)
	case int64:
		return strconv.FormatInt(n, 10)
	}
	return "0"
}

// ParseShardOpID reads killOp's op through a router, "<shard>:<opid>",
// with mongos's errors.
func ParseShardOpID(s string) (shard string, opid int32, err error) {
	sep := strings.IndexByte(s, ':')
	if len(s) < 3 || sep <= 0 || sep == len(s)-1 {
		return "", 0, mongoerr.Newf(mongoerr.Location28625,
			`The op argument to killOp must be of the format shardid:opid but found "%s"`, s)
	}
	n, err := strconv.ParseInt(s[sep+1:], 10, 32)
	if err != nil {
		return "", 0, mongoerr.Newf(mongoerr.FailedToParse, "Bad opid %q in the op argument to killOp", s[sep+1:])
	}
	return s[:sep], int32(n), nil
}
