package activity

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Command runs the profile command on db: it answers the settings as
// they were, and applies body's unless its level is -1. refuse, when not
// nil, refuses a level the server cannot profile at (mongos takes only
// -1 and 0).
func (p *Profiler) Command(db string, body bson.D, refuse func(level int64) error) (bson.D, error) {
	level, err := cmdargs.Int64("profile", "profile", body[0].Value)
	if err != nil {
		return nil, err
	}
	if level < -1 || level > 2 {
		return nil, mongoerr.Newf(mongoerr.BadValue, "Invalid profiling level: %d", level)
	}
	if refuse != nil {
		if err := refuse(level); err != nil {
			return nil, err
		}
	}
	was := p.Get(db)
	reply := bson.D{{Key: "was", Value: int32(was.Level)}, {Key: "slowms", Value: int32(was.SlowMS)}, {Key: "sampleRate", Value: was.SampleRate}}
	if level == -1 {
		return reply, nil
	}
	next, setSlow, err := profileSettings(body, int(level), was)
	if err != nil {
		return nil, err
	}
	p.Set(db, next, setSlow)
	return reply, nil
}

func profileSettings(body bson.D, level int, was ProfileSettings) (ProfileSettings, bool, error) {
	next := ProfileSettings{Level: level, SlowMS: was.SlowMS, SampleRate: was.SampleRate}
	setSlow := false
	if v, ok := bsonutil.Field(body, "slowms"); ok {
		n, err := cmdargs.Int64("profile", "slowms", v)
		if err != nil {
			return next, false, err
		}
		next.SlowMS, setSlow = n, true
	}
	if v, ok := bsonutil.Field(body, "filter"); ok && v != nil {
		return next, false, mongoerr.New(mongoerr.BadValue, "the profiler 'filter' option is not supported by Mayfly")
	}
	if v, ok := bsonutil.Field(body, "sampleRate"); ok {
		f, isF := v.(float64)
		if !isF || f < 0 || f > 1 {
			return next, false, mongoerr.New(mongoerr.BadValue, "'sampleRate' must be between 0.0 and 1.0 inclusive")
		}
		if f != 1 {
			return next, false, mongoerr.New(mongoerr.BadValue, "profiler sampleRate other than 1.0 is not supported by Mayfly")
		}
		next.SampleRate = f
	}
	return next, setSlow, nil
}
