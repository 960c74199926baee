package failpoint

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Parse reads the mode and data of a configureFailPoint command with
// mongod's checks and messages.
func Parse(cmd bson.D) (Setting, error) {
	v, ok := bsonutil.Lookup(cmd, "mode")
	if !ok {
		return Setting{}, mongoerr.New(mongoerr.IllegalOperation, "When setting a failpoint, you must supply a 'mode'")
	}
	s, err := parseMode(v)
	if err != nil {
		return Setting{}, err
	}
	if data, ok := bsonutil.Lookup(cmd, "data"); ok {
		d, isDoc := data.(bson.D)
		if !isDoc {
			return Setting{}, mongoerr.New(mongoerr.TypeMismatch, "the 'data' option must be a JSON object")
		}
		s.Data = d
	}
	return s, nil
}

func parseMode(v any) (Setting, error) {
	switch m := v.(type) {
	case string:
		switch m {
		case "off":
			return Setting{Mode: Off}, nil
		case "alwaysOn":
			return Setting{Mode: AlwaysOn}, nil
		}
		return Setting{}, mongoerr.Newf(mongoerr.BadValue, "unknown mode: %s", m)
	case bson.D:
		return parseModeDoc(m)
	}
	return Setting{}, mongoerr.New(mongoerr.TypeMismatch, "'mode' must be a string or JSON object")
}

func parseModeDoc(m bson.D) (Setting, error) {
	if _, ok := bsonutil.Lookup(m, "times"); ok {
		n, err := modeCount(m, "times")
		return Setting{Mode: Times, Count: n}, err
	}
	if _, ok := bsonutil.Lookup(m, "skip"); ok {
		n, err := modeCount(m, "skip")
		return Setting{Mode: Skip, Count: n}, err
	}
	if v, ok := bsonutil.Lookup(m, "activationProbability"); ok {
		p, isNum := bsonutil.ToFloat(v), bsonutil.IsNumber(v)
		if !isNum {
			return Setting{}, mongoerr.New(mongoerr.TypeMismatch, "the 'activationProbability' option to 'mode' must be a double between 0 and 1")
		}
		if p < 0 || p > 1 {
			return Setting{}, mongoerr.Newf(mongoerr.BadValue, "activationProbability must be between 0.0 and 1.0; found %v", p)
		}
		return Setting{Mode: Random, Probability: p}, nil
	}
	return Setting{}, mongoerr.New(mongoerr.BadValue, "'mode' must be one of 'off', 'alwaysOn', '{times:n}', '{skip:n}' or '{activationProbability:p}'")
}

// modeCount reads times or skip: an integral number from 0 to MaxInt32.
func modeCount(m bson.D, field string) (int64, error) {
	n, err := IntegerField(m, field)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, mongoerr.Newf(mongoerr.BadValue, "'%s' option to 'mode' must be positive", field)
	}
	if n > math.MaxInt32 {
		return 0, mongoerr.Newf(mongoerr.BadValue, "'%s' option to 'mode' is too large", field)
	}
	return n, nil
}

// IntegerField reads an integral number field as mongod's
// bsonExtractIntegerField does, with its errors.
func IntegerField(d bson.D, field string) (int64, error) {
	v, ok := bsonutil.Lookup(d, field)
	if !ok {
		return 0, mongoerr.Newf(mongoerr.NoSuchKey, "Missing expected field \"%s\"", field)
	}
	f, isNum := bsonutil.ToFloat(v), bsonutil.IsNumber(v)
	if !isNum {
		return 0, mongoerr.Newf(mongoerr.TypeMismatch, "Expected field \"%s\" to have numeric type, but found %s", field, bsonutil.TypeName(v))
	}
	if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, mongoerr.Newf(mongoerr.BadValue, "Expected field \"%s\" to have a value exactly representable as a 64-bit integer, but found %s: %v", field, field, v)
	}
	if n, isLong := v.(int64); isLong {
		return n, nil
	}
	return int64(f), nil
}
