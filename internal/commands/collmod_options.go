package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// collMod of Mayfly's own index options lruLimit and expireElements. They
// answer as collMod's hidden does: <option>_old and <option>_new, nothing
// when unchanged. Their rules are createIndexes' (the catalog's), with
// collMod's code: InvalidOptions for a rule, TypeMismatch for a type.

// lruOff is the lruLimit value that removes the limit, as "off" removes
// a clustered collection's expireAfterSeconds.
const lruOff = "off"

// applyLRUMod sets (a {documents, bytes} object) or removes ("off") the
// index's lruLimit. The reply's lruLimit_old is the limit as it was
// given, absent when there was none; lruLimit_new likewise.
func applyLRUMod(ix *catalog.Index, v any) (bson.D, error) {
	old, hadOld := lookup(ix.Spec, catalog.LRULimitOption)
	if s, isString := v.(string); isString {
		if s != lruOff {
			return nil, mongoerr.Newf(mongoerr.InvalidOptions, "Invalid string value for the '%s' option. Got: '%s'. Accepted value is '%s'", catalog.LRULimitOption, s, lruOff)
		}
		if !hadOld {
			return nil, nil
		}
		ix.LRUDocs, ix.LRUBytes = 0, 0
		ix.Spec = removeSpecField(ix.Spec, catalog.LRULimitOption)
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
	ix.Spec = setSpecField(ix.Spec, catalog.LRULimitOption, v)
	return append(reply, bson.E{Key: catalog.LRULimitOption + "_new", Value: v}), nil
}

// applyElementsMod turns expireElements on or off.
func applyElementsMod(ix *catalog.Index, on bool) (bson.D, error) {
	if ix.ExpireElements == on {
		return nil, nil
	}
	if err := catalog.ModExpireElements(ix, on, ix.Spec); err != nil {
		return nil, collModRuleError(err)
	}
	reply := bson.D{{Key: catalog.ExpireElementsOption + "_old", Value: !on}, {Key: catalog.ExpireElementsOption + "_new", Value: on}}
	if on {
		ix.Spec = setSpecField(ix.Spec, catalog.ExpireElementsOption, true)
	} else {
		ix.Spec = removeSpecField(ix.Spec, catalog.ExpireElementsOption)
	}
	return reply, nil
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
