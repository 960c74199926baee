package ddl

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// collMod of Mayfly's own index options lruLimit, expireElements and
// expiryWarningSeconds. They answer as collMod's hidden does:
// <option>_old and <option>_new, nothing when unchanged. Their rules are
// createIndexes' (the catalog's), with collMod's code: InvalidOptions for
// a rule, TypeMismatch for a type.

// optionOff is the value that removes lruLimit or expiryWarningSeconds,
// as "off" removes a clustered collection's expireAfterSeconds.
const optionOff = "off"

// applyLRUMod sets (a {documents, bytes} object) or removes ("off") the
// index's lruLimit. The reply's lruLimit_old is the limit as it was
// given, absent when there was none; lruLimit_new likewise.
func applyLRUMod(ix *catalog.Index, v any) (bson.D, error) {
	old, hadOld := bsonutil.Field(ix.Spec, catalog.LRULimitOption)
	if s, isString := v.(string); isString {
		if s != optionOff {
			return nil, mongoerr.Newf(mongoerr.InvalidOptions, "Invalid string value for the '%s' option. Got: '%s'. Accepted value is '%s'", catalog.LRULimitOption, s, optionOff)
		}
		if !hadOld {
			return nil, nil
		}
		ix.LRUDocs, ix.LRUBytes = 0, 0
		ix.Spec = bsonutil.WithoutField(ix.Spec, catalog.LRULimitOption)
		return bson.D{{Key: catalog.LRULimitOption + "_old", Value: old}}, nil
	}
	if err := catalog.ModLRULimit(ix, v, ix.Spec); err != nil {
		return nil, collModRuleError(err)
	}
	if hadOld && bsonutil.Compare(old, v) == 0 {
		return nil, nil
	}
	var reply bson.D
	if hadOld {
		reply = append(reply, bson.E{Key: catalog.LRULimitOption + "_old", Value: old})
	}
	ix.Spec = bsonutil.WithField(ix.Spec, catalog.LRULimitOption, v)
	return append(reply, bson.E{Key: catalog.LRULimitOption + "_new", Value: v}), nil
}

// applyElementsMod turns expireElements on or off.
func applyElementsMod(ix *catalog.Index, on bool) (bson.D, error) {
	if ix.ExpireElements == on {
		return nil, nil
	}
	next := *ix
	if err := catalog.ModExpireElements(&next, on, ix.Spec); err != nil {
		return nil, collModRuleError(err)
	}
	return flagMod(ix, catalog.ExpireElementsOption, &ix.ExpireElements, on), nil
}

// collModRuleError gives a catalog rule's error collMod's code, as
// applyTTLMod does: InvalidOptions, with the rule's message; a type
// error stays TypeMismatch.
func collModRuleError(err error) error {
	me := mongoerr.As(err)
	if me.Code == mongoerr.TypeMismatch || me.Code == mongoerr.InternalError {
		return err
	}
	return mongoerr.New(mongoerr.InvalidOptions, me.Msg)
}

// applyWarningMod sets expiryWarningSeconds (a whole number of seconds)
// or, with "off", removes it; it answers as lruLimit does. A new lead time
// moves the window at the next pass: a longer one warns at once of the
// documents it now takes in, a shorter one waits until its window passes
// where the warnings had got.
func applyWarningMod(ix *catalog.Index, v any) (bson.D, error) {
	secs, err := warningSeconds(ix, v)
	if err != nil {
		return nil, err
	}
	old := ix.WarnBefore
	if secs == old {
		return nil, nil
	}
	var reply bson.D
	if old > 0 {
		reply = append(reply, bson.E{Key: catalog.WarningOption + "_old", Value: old})
	}
	ix.WarnBefore = secs
	if secs == 0 {
		ix.Spec = bsonutil.WithoutField(ix.Spec, catalog.WarningOption)
		return reply, nil
	}
	ix.Spec = bsonutil.WithField(ix.Spec, catalog.WarningOption, int32(secs))
	return append(reply, bson.E{Key: catalog.WarningOption + "_new", Value: secs}), nil
}

// warningSeconds is collMod's expiryWarningSeconds value: 0 for "off".
func warningSeconds(ix *catalog.Index, v any) (int64, error) {
	if s, isString := v.(string); isString {
		if s != optionOff {
			return 0, mongoerr.Newf(mongoerr.InvalidOptions, "Invalid string value for the '%s' option. Got: '%s'. Accepted value is '%s'", catalog.WarningOption, s, optionOff)
		}
		return 0, nil
	}
	f := bsonutil.ToFloat(v)
	if !bsonutil.IsNumber(v) || f != math.Trunc(f) || f < 1 || f > math.MaxInt32 {
		return 0, mongoerr.Newf(mongoerr.InvalidOptions, "'%s' must be a whole number of seconds from 1 to 2147483647, or '%s'", catalog.WarningOption, optionOff)
	}
	if !ix.TTL {
		return 0, mongoerr.Newf(mongoerr.InvalidOptions, "the '%s' option requires a TTL index, and index %s has no expireAfterSeconds", catalog.WarningOption, ix.Name)
	}
	return int64(f), nil
}
